"""The scenario front end: TOML files and the Python builder -> Model and run settings (reading, parameters, expressions, frames, placement, flexible-body configuration, writing)."""
