"""The runners' client side: an environment served elsewhere, used as if it were in-process.

:mod:`~envhub.client.http_env` is the environment over HTTP (:class:`HTTPEnv`),
:mod:`~envhub.client.ws_channel` its WebSocket transport, and
:mod:`~envhub.client.child_server` the ``envhub serve`` child that ``make(runner="http")``
starts when no URL is given. It stands on the contract alone.
"""
