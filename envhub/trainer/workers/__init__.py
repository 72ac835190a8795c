"""The Ray actors and the cluster that drives them.

Policy ranks (FSDP2, LoRA, packing, fused kernels), generation engines, environment workers and
their placement.
"""
