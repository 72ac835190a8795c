"""The recording gateway: an OpenAI-compatible server in front of a model, for agent programs.

An agent program that people wrote (a ReAct loop on the ``openai`` SDK, a coding agent) calls
``/v1/chat/completions`` like any endpoint. The gateway answers from a model backend (an
envhub generation engine, or an upstream OpenAI-compatible URL) and records, per episode,
exactly what the model saw and sampled: the prompt token ids, the sampled ids and their
logprobs, the weights version, the finish reason and the messages. The trainer trains on those
ids; the evaluator scores the agent's last model reply.

Layout:

* :mod:`.recording`: one episode's calls, token-exact (prefix reuse, segments);
* :mod:`.episodes`: per-episode credentials and budgets (:class:`~.episodes.Episodes`);
* :mod:`.backends`: the model behind the gateway (engine batcher, upstream URL);
* :mod:`.service`: one chat completion, from request to recorded call;
* :mod:`.app`: the FastAPI routes (``/v1/chat/completions`` with SSE, ``/v1/models``);
* :mod:`.server`: the app on a loopback port in a background thread;
* :mod:`.trace`: the JSONL trace format, written under a run folder;
* :mod:`.agent`: running an agent program as an episode (the status table);
* :mod:`.cli`: ``envhub gateway``.

The gateway stands on the contract, the engines and the registry; evaluation and the trainer
import it, never the reverse. Importing this package loads no heavy library.
"""
