"""Who may act on which episode over MCP: the bookkeeping behind ``/mcp`` and ``/mcp/control``.

The agent (the policy) gets the environment's tools at ``/mcp``; the harness starts and ends
episodes at ``/mcp/control``. This module holds the rules, apart from the MCP SDK:

* **An agent's MCP session plays one episode**, the one its URL names (``/mcp?episode=ID``,
  the id the harness got from ``start_episode`` or ``POST /reset``), bound at its first call.
  It can never touch another: a call naming another episode (a different ``?episode=``, or an
  ``episode_id`` argument) is refused, and an episode bound to one session is refused to every
  other, stateless calls included.
* **A stateful control session holds one episode at a time**; starting another while it is in
  progress is a restart, which the caller pays as a truncation (see :mod:`.mcp`).
* **Quotas per client address**: live episodes started through the control server, at most
  ``per_client`` in all and ``stateless`` of them without an MCP session (a stateless caller
  has no session to hold them by). A start is refused over either, before any episode is made
  (a slot is reserved first, so concurrent starts cannot overrun it): one client cannot fill
  the session table and starve the others. Episodes end as any other (answer,
  ``finish_episode``, idle expiry after the server's ``--session-ttl``).

Every map is bounded (:data:`REMEMBERED` entries, oldest forgotten first).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

REMEMBERED = 10_000
"""Entries kept per map: the SDK's own limit of open MCP sessions per session manager."""


class ClaimError(ValueError):
    """A call on an episode this caller may not touch; the message says which and why."""


def _remember(table: OrderedDict[str, str], key: str, value: str) -> None:
    table[key] = value
    table.move_to_end(key)
    while len(table) > REMEMBERED:
        table.popitem(last=False)


class AgentClaims:
    """Which agent MCP session plays which episode."""

    def __init__(self) -> None:
        """No session bound yet."""
        self.episode_of: OrderedDict[str, str] = OrderedDict()
        self.player_of: OrderedDict[str, str] = OrderedDict()

    def episode(self, session: str | None, url_episode: str | None, named: str | None) -> str:
        """The episode a call may act on; binds a session at its first call.

        ``session``: the call's ``Mcp-Session-Id`` (None: stateless); ``url_episode``: the
        ``?episode=`` of its URL; ``named``: an ``episode_id`` argument, if the call sent one.
        """
        bound = self.episode_of.get(session) if session else None
        episode = bound or url_episode
        if episode is None:
            raise ClaimError(
                "no episode: the harness starts one (start_episode on /mcp/control, or POST "
                "/reset) and connects the agent to its agent_url, "
                "/mcp?episode=<episode_id>&secret=<session_secret>"
            )
        for other in (url_episode, named):
            if other is not None and other != episode:
                raise ClaimError(
                    f"this MCP session plays episode {episode!r}; it cannot act on episode "
                    f"{other!r} (one session, one episode)"
                )
        player = self.player_of.get(episode)
        if player is not None and player != session:
            raise ClaimError(
                f"episode {episode!r} is played by another MCP session; an episode belongs to "
                "the one session that first used it"
            )
        if session and bound is None:
            _remember(self.episode_of, session, episode)
            _remember(self.player_of, episode, session)
        return episode

    def release(self, session: str) -> None:
        """Forget an agent session that ended (its episode stays the harness's)."""
        episode = self.episode_of.pop(session, None)
        if episode is not None and self.player_of.get(episode) == session:
            del self.player_of[episode]


class ControlClaims:
    """Which control session or client address started which episode, and the quotas."""

    def __init__(self, per_client: int, stateless: int, live: Callable[[str], bool]) -> None:
        """Quotas of live episodes per client address: all, and those started statelessly.

        ``live(id)``: whether an episode is still running.
        """
        self.per_client, self.stateless, self.live = per_client, stateless, live
        self.held: OrderedDict[str, str] = OrderedDict()
        """The episode of each stateful control session."""
        self.started_by: OrderedDict[str, dict[str, bool]] = OrderedDict()
        """Each address's episodes (or reservations), and whether each was stateless."""
        self.pending: set[str] = set()
        self.reservations = 0

    def reserve(self, address: str, stateless: bool) -> str:
        """A slot for a start from ``address``, refused over its quotas; :meth:`record` fills it.

        Reserved before the episode is made, so concurrent starts cannot overrun a quota.
        """
        mine = {e: s for e, s in self.started_by.get(address, {}).items() if self._counts(e)}
        loose = sum(mine.values())
        end_one = "end one first (final_answer, finish_episode) or let it expire idle"
        if stateless and loose >= self.stateless:
            raise ClaimError(
                f"this client ({address}) holds {loose} live episodes started without an MCP "
                f"session, the most it may; {end_one}, or start in an MCP session"
            )
        if len(mine) >= self.per_client:
            raise ClaimError(
                f"this client ({address}) holds {len(mine)} live episodes, the most one client "
                f"may; {end_one}"
            )
        self.reservations += 1
        token = f"reserved-{self.reservations}"
        self.pending.add(token)
        self.started_by[address] = {**mine, token: stateless}
        self.started_by.move_to_end(address)
        while len(self.started_by) > REMEMBERED:
            self.started_by.popitem(last=False)
        return token

    def record(self, token: str, address: str, session: str | None, episode: str | None) -> None:
        """Fill the reservation ``token`` with ``episode`` (None: the start failed)."""
        self.pending.discard(token)
        mine = self.started_by.get(address, {})
        stateless = mine.pop(token, session is None)
        if episode is None:
            return
        mine[episode] = stateless
        if session:
            _remember(self.held, session, episode)

    def owned(self, session: str | None, address: str, named: str | None) -> str:
        """The episode a ``finish_episode`` call may end."""
        if session:
            held = self.held.get(session)
            if held is None or named not in (None, held):
                raise ClaimError(
                    f"this control session holds {'no episode' if held is None else repr(held)}; "
                    "it can end only the episode it started"
                )
            return held
        if named is None:
            raise ClaimError("without an MCP session, pass the episode_id start_episode answered")
        if not self.started_by.get(address, {}).get(named, False):  # a session's is its own
            raise ClaimError(
                f"episode {named!r} was not started by this client ({address}) without an MCP "
                "session"
            )
        return named

    def _counts(self, episode: str) -> bool:
        return episode in self.pending or self.live(episode)
