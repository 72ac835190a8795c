"""The runners' client side: an environment served elsewhere, used as if it were in-process.

:mod:`~envhub.client.remote_env` is the environment (:class:`RemoteEnv`); it holds one *wire*, the
protocol of :mod:`~envhub.client.transport` (:class:`Wire`, with the :class:`Session` it
carries), spoken over the HTTP routes (:mod:`~envhub.client.http_wire`) or a WebSocket
(:mod:`~envhub.client.ws_wire`, its sockets in :mod:`~envhub.client.ws_socket`). Every call is
a plan (:mod:`~envhub.client.plan`), written once and driven blocking or awaited over the
connections that forks share (:mod:`~envhub.client.pool`); every answer is read within one
bound and a deadline (:mod:`~envhub.client.reading`, the bridges' too).
:mod:`~envhub.client.child_server` is the ``envhub serve`` child that ``make(runner="http")``
starts when no URL is given. It stands on the contract alone.
"""
