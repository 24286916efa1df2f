"""rbcosim: rigid multibody solver for rigid–flexible co-simulation."""

__version__ = "0.1.0"
PROTOCOL_VERSION = "1.3"
