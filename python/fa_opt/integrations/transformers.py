"""Hugging Face transformers: ``attn_implementation="fa_opt"``.

    import fa_opt.integrations.transformers as fa_hf
    fa_hf.register()                       # once
    model.set_attn_implementation("fa_opt")  # or from_config(..., attn_implementation="fa_opt")

transformers builds no mask for an implementation it has no mask function
for, so the attention function sees ``attention_mask=None`` and applies the
causal mask itself: bottom-right aligned (queries are the last positions of
the keys, right for prefill and for decoding with a KV cache alike). A
padded batch (a 2-D ``attention_mask`` with zeros) is not supported: the
function raises rather than ignoring the padding.
"""

from __future__ import annotations

NAME = "fa_opt"


def fa_opt_attention_forward(module, query, key, value, attention_mask,
                             dropout: float = 0.0, scaling=None,
                             is_causal=None, **kwargs):
    """transformers' attention-function signature: q/k/v ``[B, H, T, D]``,
    returns ``(o [B, T, H, D], None)``."""
    from ..checks import FaOptUnsupportedError
    from ..ops import attention
    if attention_mask is not None:
        raise FaOptUnsupportedError(
            "fa_opt attention (transformers): attention_mask is not supported "
            "(padding masks are not implemented)")
    if dropout and module.training:
        raise FaOptUnsupportedError(
            f"fa_opt attention (transformers): dropout={dropout} is not "
            f"supported")
    groups = getattr(module, "num_key_value_groups", 1)
    if groups > 1:  # grouped-query attention: materialize the repeated heads
        key = key.repeat_interleave(groups, dim=1)
        value = value.repeat_interleave(groups, dim=1)
    causal = is_causal if is_causal is not None else getattr(
        module, "is_causal", True)
    out = attention(query, key, value,
                    causal="bottom_right" if causal else "none", scale=scaling)
    return out.transpose(1, 2).contiguous(), None


def register() -> str:
    """Registers ``"fa_opt"`` with transformers' AttentionInterface."""
    from transformers import AttentionInterface
    AttentionInterface.register(NAME, fa_opt_attention_forward)
    return NAME
