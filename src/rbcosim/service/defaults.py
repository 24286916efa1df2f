"""The server's default bounds, in a module of their own: `rbcosim serve` shows them in its
options without importing the service (`rbcosim.service.server` re-exports them)."""

DEFAULT_BIND = "tcp://127.0.0.1:5555"
DEFAULT_SEND_HWM = 1000  # unread replies queued per client before further ones are dropped
DEFAULT_BUILD_TIMEOUT = 120.0  # s a create_session's model build may take
DEFAULT_SESSION_IDLE = 3600.0  # s a session may go without a request before it is closed
DEFAULT_SEND_BYTES = 32 * 1024 * 1024  # bytes of replies queued per client (serve --send-bytes)
