"""The Python client of Skiplock's REST API (`skiplock-client`), a distribution of its own: it imports nothing of
the server, so it installs into any application's environment."""

__version__ = "0.1.0"
