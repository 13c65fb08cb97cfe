"""uvicorn's HTTP/1.1 protocol (h11) with a header timeout, and a server that announces its
shutdown: the one place pdx touches uvicorn internals.

uvicorn closes a kept-alive connection only when it stays silent for
`timeout_keep_alive` seconds after a response; a client that sends part of a
request line or headers, or trickles one byte at a time, holds its connection
forever (slowloris). Here every connection must deliver a complete request
head within `header_timeout_s` of opening, and within `keep_alive_s +
header_timeout_s` of each response being sent; otherwise it is closed. Bodies have their own budget in the app
(`--timeout-s`, answered 408).

On shutdown uvicorn waits `timeout_graceful_shutdown` for requests in flight,
then cancels them (a 500 and a logged traceback each); `draining_server` calls
back first, so the app can answer them itself before that happens.

Relies on `uvicorn.protocols.http.h11_impl.H11Protocol` and its
`connection_made`, `handle_events`, `on_response_complete`, `connection_lost`,
`loop`, `transport` and `cycle.response_complete`, and on `uvicorn.Server.shutdown`
(all present since uvicorn 0.13); tests/export/test_server_hardening.py names them.
"""

from __future__ import annotations

import asyncio
from typing import Callable

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["draining_server", "header_timeout_protocol", "UVICORN_NAMES"]

# What this module relies on, checked by the tests: (class, method names).
UVICORN_NAMES = ((H11Protocol, ("connection_made", "handle_events", "on_response_complete", "connection_lost")),
                 (uvicorn.Server, ("shutdown",)))


def draining_server(config: uvicorn.Config, on_shutdown: Callable[[], None]) -> uvicorn.Server:
    """A `uvicorn.Server` that calls `on_shutdown()` (on the event loop) as its graceful shutdown begins."""

    class DrainingServer(uvicorn.Server):
        async def shutdown(self, sockets=None) -> None:
            on_shutdown()
            await super().shutdown(sockets=sockets)

    return DrainingServer(config)


def header_timeout_protocol(header_timeout_s: float, keep_alive_s: float = 0.0) -> type[asyncio.Protocol]:
    """An h11 protocol class for `uvicorn.Config(http=...)` closing connections slow to send a request head.

    Args:
      header_timeout_s: most seconds from opening to a complete request head.
      keep_alive_s: added after a response (the idle time uvicorn's keep-alive allows first).

    Example:
      >>> import uvicorn
      >>> config = uvicorn.Config(app=None, http=header_timeout_protocol(10.0, 5.0))  # doctest: +SKIP
    """

    class HeaderTimeoutProtocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm(header_timeout_s)

        def handle_events(self) -> None:
            super().handle_events()
            if not self._waiting_for_head():  # a request head arrived
                self._disarm()

        def on_response_complete(self) -> None:
            self._arm(keep_alive_s + header_timeout_s)  # before super(): a pipelined request disarms
            super().on_response_complete()

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _waiting_for_head(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _arm(self, seconds: float) -> None:
            self._disarm()
            self._header_timer = self.loop.call_later(seconds, self._head_timed_out)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _head_timed_out(self) -> None:
            self._header_timer = None
            if self._waiting_for_head() and not self.transport.is_closing():
                self.logger.debug("closing a connection that sent no complete request head in %g s",
                                  header_timeout_s)
                self.transport.close()

    return HeaderTimeoutProtocol
