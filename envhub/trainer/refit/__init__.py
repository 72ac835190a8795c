"""Refit: the policy's weights into the generation engines.

One ``Sender``/``Receiver`` pair per transport (in process, Ray's object store, the LoRA
adapter, a torch collective group, vLLM's own API), built in one place (``build.py``) from one
table of supported combinations (``table.py``). Imports no room of the trainer
(``tests/test_layout.py``).
"""
