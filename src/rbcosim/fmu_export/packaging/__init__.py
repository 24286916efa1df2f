"""Export time: writing FMUs (Python-runtime via pythonfmu, native C) and SSP packages."""
