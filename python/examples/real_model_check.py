"""A model nobody here wrote, with its attention replaced by fa_opt's.

Builds a Llama (transformers' LlamaForCausalLM, random weights, no download)
in bf16 on the GPU, runs one batch with stock SDPA attention and with
``attn_implementation="fa_opt"``, and compares logits, loss and (when the
backward kernels exist) every parameter gradient, each also against the same
model in float32 with stock SDPA. Then times a forward and a training step
(forward + backward) of both, with CUDA events, in the same run.

    HF_HUB_OFFLINE=1 FA_OPT_KERNEL_DIRS=.dev/pykernels \
        python3 python/examples/real_model_check.py [--out results.json]
"""

import argparse
import copy
import json
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402


def rel(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm()).item()


def grads(model):
    return [p.grad.detach().float().clone() if p.grad is not None else None
            for p in model.parameters()]


def grad_rel(gs, ref):
    num = sum(((a.double() - b.double()) ** 2).sum().item()
              for a, b in zip(gs, ref) if a is not None and b is not None)
    den = sum((b.double() ** 2).sum().item() for b in ref if b is not None)
    worst = max(rel(a, b) for a, b in zip(gs, ref)
                if a is not None and b is not None and b.norm() > 0)
    return (num / den) ** 0.5, worst


def timed(fn, warmup=2, repeat=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(True), torch.cuda.Event(True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seqlen", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--out")
    args = parser.parse_args()

    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM

    import fa_opt.integrations.transformers as fa_hf

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32000, hidden_size=args.hidden,
                         intermediate_size=int(args.hidden * 2.75),
                         num_hidden_layers=args.layers,
                         num_attention_heads=args.heads,
                         num_key_value_heads=args.heads,
                         max_position_embeddings=max(2048, args.seqlen),
                         attn_implementation="sdpa")
    ref32 = LlamaForCausalLM(config).cuda().float()
    model = copy.deepcopy(ref32).to(torch.bfloat16)
    ids = torch.randint(0, config.vocab_size, (args.batch, args.seqlen),
                        device="cuda")
    fa_hf.register()

    def use(m, impl):
        try:
            m.set_attn_implementation(impl)
        except Exception:  # older API
            m.config._attn_implementation = impl
        assert m.config._attn_implementation == impl

    def run(m, backward):
        m.zero_grad(set_to_none=True)
        out = m(input_ids=ids, labels=ids)
        if backward:
            out.loss.backward()
        return out

    result = {"date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
              "transformers": transformers.__version__,
              "gpu": torch.cuda.get_device_name(),
              "model": f"LlamaForCausalLM {args.layers} layers, hidden "
                       f"{args.hidden}, {args.heads} heads (D "
                       f"{args.hidden // args.heads}), vocab 32000, random "
                       f"weights, bf16",
              "batch": args.batch, "seqlen": args.seqlen}

    # float32 reference (stock SDPA).
    use(ref32, "sdpa")
    out32 = run(ref32, True)
    g32 = grads(ref32)
    logits32, loss32 = out32.logits.detach().float(), out32.loss.item()
    del out32
    ref32.zero_grad(set_to_none=True)

    use(model, "sdpa")
    stock = run(model, True)
    g_stock = grads(model)
    logits_stock, loss_stock = stock.logits.detach().float(), stock.loss.item()
    del stock

    use(model, "fa_opt")
    backward_ok = True
    try:
        ours = run(model, True)
    except NotImplementedError as err:
        backward_ok = False
        result["backward"] = f"not available: {str(err)[:300]}"
        with torch.no_grad():
            ours = run(model, False)
    logits_ours, loss_ours = ours.logits.detach().float(), ours.loss.item()
    del ours
    g_ours = grads(model) if backward_ok else None

    result.update({
        "loss": {"fp32": loss32, "stock_bf16": loss_stock, "fa_opt_bf16": loss_ours},
        "logits_rel_err": {"fa_opt_vs_stock": rel(logits_ours, logits_stock),
                           "fa_opt_vs_fp32": rel(logits_ours, logits32),
                           "stock_vs_fp32": rel(logits_stock, logits32)},
    })
    if backward_ok:
        result["grad_rel_err"] = {
            "fa_opt_vs_stock": grad_rel(g_ours, g_stock),
            "fa_opt_vs_fp32": grad_rel(g_ours, g32),
            "stock_vs_fp32": grad_rel(g_stock, g32),
        }
    del ref32, g32

    # Timing: forward (no grad) and a training step, stock vs ours.
    def fwd(impl):
        use(model, impl)
        with torch.no_grad():
            return timed(lambda: model(input_ids=ids))

    def step(impl):
        use(model, impl)
        return timed(lambda: run(model, True))

    result["forward_ms"] = {"stock_sdpa": fwd("sdpa"), "fa_opt": fwd("fa_opt")}
    if backward_ok:
        result["train_step_ms"] = {"stock_sdpa": step("sdpa"),
                                   "fa_opt": step("fa_opt")}

    le = result["logits_rel_err"]
    # bf16 tolerance: ours must be about as close to fp32 as stock is.
    result["pass"] = bool(le["fa_opt_vs_fp32"] <= 1.5 * le["stock_vs_fp32"] + 1e-3
                          and abs(loss_ours - loss32) <= 1.5 * abs(loss_stock - loss32) + 2e-2)
    if backward_ok:
        ge = result["grad_rel_err"]
        result["pass"] &= bool(ge["fa_opt_vs_fp32"][0] <= 1.5 * ge["stock_vs_fp32"][0] + 1e-3)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
