"""Fused MLP and RMSNorm for the policy's training forward: the same numbers, fewer saved tensors.

Autograd keeps every intermediate that a backward formula reads, and in a small decoder those
are most of a step's memory: per token and layer, a Llama MLP saves ``gate``, ``silu(gate)``,
``up`` and ``silu(gate) * up`` (four ``intermediate_size`` vectors) and an RMSNorm saves its
input and its normalised input. The fused forms save only what cannot be recomputed cheaply
(``gate`` and ``up``; the norm's input and its ``1 / rms``) and redo the elementwise work in
backward: two of the MLP's four intermediate tensors and one of the norm's two ``hidden_size``
tensors are never kept. The matrix products are the same calls on the same inputs, and the
elementwise backward follows autograd's formulas, so the results match the plain modules to
float rounding (``tests/trainer/test_fused.py``).

:func:`fuse` swaps the ``forward`` of the modules it knows (Llama, Mistral, Qwen2, Qwen3
MLPs with SiLU, and their RMSNorms) on one model instance; any other module is left alone.
"""

from __future__ import annotations

import types
from typing import Any

import torch
import torch.nn.functional as F

MLP_CLASSES = frozenset({"LlamaMLP", "MistralMLP", "Qwen2MLP", "Qwen3MLP"})
"""MLPs computing ``down_proj(act_fn(gate_proj(x)) * up_proj(x))``."""
NORM_CLASSES = frozenset({"LlamaRMSNorm", "MistralRMSNorm", "Qwen2RMSNorm", "Qwen3RMSNorm"})
"""RMSNorms computing ``weight * (x / rms(x))`` in float32 (``variance_epsilon`` inside)."""


def fuse(model: torch.nn.Module) -> int:
    """Give ``model``'s known MLPs and RMSNorms their fused forward; the number fused.

    An MLP whose ``down_proj`` is not a plain ``Linear`` (a LoRA layer) keeps its forward:
    the fused one reads ``down_proj.weight`` directly and would skip the adapter.
    """
    n = 0
    for module in model.modules():
        name = type(module).__name__
        plain_down = isinstance(getattr(module, "down_proj", None), torch.nn.Linear)
        if name in MLP_CLASSES and _is_silu(getattr(module, "act_fn", None)) and plain_down:
            module.forward = types.MethodType(_mlp_forward, module)
            n += 1
        elif name in NORM_CLASSES:
            module.forward = types.MethodType(_norm_forward, module)
            n += 1
    return n


def _is_silu(act: Any) -> bool:
    return isinstance(act, torch.nn.SiLU) or type(act).__name__ == "SiLUActivation"


def _mlp_forward(self: Any, x: torch.Tensor) -> torch.Tensor:
    down = self.down_proj
    return _SwiGLUDown.apply(self.gate_proj(x), self.up_proj(x), down.weight, down.bias)


def _norm_forward(self: Any, hidden_states: torch.Tensor) -> torch.Tensor:
    return _RMSNorm.apply(hidden_states, self.weight, self.variance_epsilon)


class _SwiGLUDown(torch.autograd.Function):
    """``linear(silu(gate) * up, weight, bias)``, saving ``gate`` and ``up`` only."""

    @staticmethod
    def forward(
        ctx: Any,
        gate: torch.Tensor,
        up: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
    ) -> torch.Tensor:
        """The plain MLP's last three operations; the product is freed after the matmul."""
        ctx.save_for_backward(gate, up, weight)
        ctx.has_bias = bias is not None
        return F.linear(F.silu(gate).mul_(up), weight, bias)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        """Recompute ``silu(gate) * up``, then autograd's formulas for linear, mul and silu."""
        gate, up, weight = ctx.saved_tensors
        # in place where a temporary is ours: fewer [tokens, intermediate] blocks allocated
        sig = torch.sigmoid(gate)
        act = gate * sig
        grad_w = grad_b = None
        if ctx.needs_input_grad[2]:
            flat = grad.reshape(-1, grad.shape[-1])
            grad_w = flat.T @ (act * up).reshape(-1, act.shape[-1])
        if ctx.has_bias and ctx.needs_input_grad[3]:
            grad_b = grad.reshape(-1, grad.shape[-1]).sum(0)
        grad_h = grad @ weight
        grad_up = act.mul_(grad_h)
        # silu'(x) = sigmoid(x) * (1 + x * (1 - sigmoid(x))), as in torch's silu_backward
        dsilu = torch.sub(1, sig).mul_(gate).add_(1).mul_(sig)
        grad_gate = grad_h.mul_(up).mul_(dsilu)
        return grad_gate, grad_up, grad_w, grad_b


class _RMSNorm(torch.autograd.Function):
    """``weight * (x * rsqrt(mean(x^2) + eps))``, saving ``x`` and ``rsqrt(...)`` only."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        """The Llama RMSNorm's operations, in float32, cast back to ``x``'s dtype."""
        xf = x.float()
        rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, weight, rstd)
        normed = (xf * rstd).to(x.dtype)
        if torch.result_type(weight, normed) == normed.dtype:
            return normed.mul_(weight)  # one block fewer than ``weight * normed``
        return weight * normed

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        """Gradients of ``x`` (float32, then cast) and ``weight``, from ``x / rms`` recomputed."""
        x, weight, rstd = ctx.saved_tensors
        normed = x.float() * rstd
        grad_w = None
        if ctx.needs_input_grad[1]:
            grad_w = (grad * normed.to(x.dtype)).reshape(-1, x.shape[-1]).sum(0)
        grad_n = (grad * weight).float()
        # d/dx of x * rstd: rstd * (g - normed * mean(g * normed))
        dot = (grad_n * normed).mean(-1, keepdim=True)
        grad_x = grad_n.sub_(normed.mul_(dot)).mul_(rstd)
        return grad_x.to(x.dtype), grad_w, None
