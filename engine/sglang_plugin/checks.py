"""The SGLang this plugin was written against, checked before any hook is registered: the
version, and the parameters of every function the plugin hooks or calls. Anything else is
refused at start with what differs, never run half-hooked (a hook on a renamed method would
silently not apply, and a changed verify step could make a swapped block lossy)."""

from __future__ import annotations

import inspect
from importlib import import_module
from typing import Any

SGLANG_VERSION = "0.5.17"
DFLASH = "sglang.srt.speculative.dflash_worker_v2"
WORKER = f"{DFLASH}.DFlashWorkerV2"
SAMPLER = f"{DFLASH}._DflashDraftSampler"
VERIFY_INPUT = "sglang.srt.speculative.dflash_info.DFlashVerifyInput"
SCHEDULER = "sglang.srt.managers.scheduler.Scheduler"
GRAMMAR_TREE = "sglang.srt.speculative.spec_utils.GrammarTree"
GRAMMAR_MASK = "sglang.srt.constrained.base_grammar_backend.GrammarMask"
GRAMMAR_WALK = "sglang.srt.speculative.spec_utils.traverse_tree"
TP_WORKER = "sglang.srt.managers.tp_worker.TpModelWorker"
MASK_POLICY = "sglang.srt.speculative.dflash_utils.resolve_dflash_verify_mask_policy"
GRAPH_RUNNER = "sglang.srt.model_executor.runner.decode_cuda_graph_runner.DecodeCudaGraphRunner"
FORWARD_MODE = "sglang.srt.model_executor.forward_batch_info.ForwardMode"

# dotted target -> (positional parameters, keyword-only parameters) as in SGLANG_VERSION
PINNED: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    f"{WORKER}.__init__": (("self", "server_args", "gpu_id", "ps", "nccl_port", "target_worker"), ()),
    f"{WORKER}.forward_batch_generation": (("self", "batch", "on_publish", "grammar_barrier"), ()),
    f"{WORKER}._greedy_sample_from_vocab_parallel_head": (
        ("self",), ("hidden_states", "lm_head", "chunk_size")),
    f"{WORKER}.note_request_finished": (("self",), ("rid", "natural_stop")),
    f"{SAMPLER}.__init__": (("self",), ("weight", "block_size", "num_org", "org_vocab_start",
                                        "max_bs", "tp_group")),
    f"{SAMPLER}.__call__": (("self", "hidden_states", "input_ids"), ()),
    f"{VERIFY_INPUT}.prepare_for_verify": (("self", "batch", "target_worker"), ()),
    f"{SCHEDULER}.get_internal_state": (("self", "recv_req"), ()),
    f"{SCHEDULER}.is_disable_overlap_for_batch": (("self", "batch", "last_batch"), ()),
    f"{FORWARD_MODE}.is_decode": (("self",), ()),
    f"{FORWARD_MODE}.is_extend_without_speculative": (("self",), ()),
    f"{GRAMMAR_TREE}.from_linear_chain": (("verify_ids_2d",), ()),  # a classmethod, bound
    GRAMMAR_WALK: (("retrieve_next_token", "retrieve_next_sibling", "draft_tokens", "grammar",
                    "allocate_token_bitmask", "vocab_size"), ()),
    # verify trees (mode "trees")
    f"{TP_WORKER}.forward_batch_generation": (
        ("self", "batch", "forward_batch", "pp_proxy_tensors", "is_verify",
         "skip_attn_backend_init"), ("capture_hidden_mode",)),
    MASK_POLICY: (("attn_backend",), ()),
    f"{GRAMMAR_TREE}.from_device": (
        ("retrieve_next_token", "retrieve_next_sibling", "draft_token"), ()),  # bound
    f"{GRAMMAR_MASK}.apply": (("self", "logits"), ()),
    f"{WORKER}.alloc_memory_pool": (
        ("self", "memory_pool_config", "req_to_token_pool", "token_to_kv_pool_allocator"), ()),
    "sglang.srt.mem_cache.memory_pool.MHATokenToKVPool.move_kv_cache": (
        ("self", "tgt_loc", "src_loc"), ()),
    # plain decode steps (width "served", plain.py)
    f"{WORKER}.init_cuda_graphs": (("self",), ()),
    f"{WORKER}._append_target_hidden_to_draft_kv_by_loc": (
        ("self",), ("target_hidden", "cache_loc", "positions", "cache_loc_2d", "commit_lens")),
    "sglang.srt.model_executor.model_runner.ModelRunner._get_attention_backend": (
        ("self", "init_new_workspace"), ()),
    f"{GRAPH_RUNNER}.__init__": (
        ("self", "model_runner"),
        ("attn_backend", "speculative_num_steps", "speculative_num_draft_tokens")),
    "sglang.srt.runtime_context.RuntimeContext.override": (("self", "source"), ()),
    "sglang.srt.speculative.dflash_utils.apply_dflash_verify_logits_adjustments": (
        (), ("next_token_logits", "sampling_info", "draft_token_num")),
    "sglang.srt.speculative.dflash_utils.compute_dflash_sampling_correct_drafts_and_bonus": (
        (), ("candidates", "next_token_logits", "sampling_info", "max_top_k",
             "uniform_top_k_value", "threshold_single", "threshold_acc", "uniform_samples",
             "uniform_samples_for_final_sampling", "use_sparse_topk")),
    "sglang.srt.speculative.spec_utils.build_grammar_vocab_mask": (
        (), ("reqs", "tree", "sampling_info", "device", "barrier")),
    "sglang.srt.speculative.draft_worker_common.make_draft_input_v2": (
        (), ("bonus_tokens", "new_seq_lens")),
}
# dataclass -> the fields the plugin reads or writes of it
FIELDS: dict[str, tuple[str, ...]] = {
    VERIFY_INPUT: ("draft_token", "positions", "draft_token_num", "custom_mask"),
    "sglang.srt.layers.logits_processor.LogitsProcessorOutput": (
        "next_token_logits", "hidden_states"),
    "sglang.srt.model_executor.forward_batch_info.ForwardBatch": ("out_cache_loc",),
    "sglang.srt.managers.schedule_batch.ScheduleBatch": (
        "reqs", "req_pool_indices", "req_to_token_pool", "forward_mode", "is_extend_in_batch"),
    "sglang.srt.managers.utils.GenerationBatchResult": (
        "next_token_ids", "accept_lens", "speculative_num_draft_tokens", "logits_output",
        "can_run_cuda_graph", "next_draft_input", "new_seq_lens"),
    "sglang.srt.speculative.dflash_info_v2.DFlashDraftInputV2": (
        "bonus_tokens", "max_top_k", "uniform_top_k_value"),
}


REPLACES = "turnspec_replaces"  # on a class the plugin puts in place of SGLang's: SGLang's


def unreplaced(obj: Any) -> Any:
    """SGLang's own class where `obj` is the plugin's replacement for it. SGLang applies its
    plugins' hooks once a process, so a second Engine started in it (a test module, a notebook)
    finds them in place; its pins are the replaced class's, not the replacement's."""
    return obj.__dict__.get(REPLACES, obj) if isinstance(obj, type) else obj


def resolve(dotted: str):
    """The object at a dotted path "pkg.mod.Class.attr" (the module imported), read through
    the plugin's own replacements (`unreplaced`)."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = unreplaced(getattr(obj, name))
        return obj
    raise ImportError(f"{dotted}: no importable module in the path")


def parameters(fn) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(positional, keyword-only) parameter names of `fn`."""
    params = inspect.signature(fn).parameters.values()
    pos = tuple(p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
    kw = tuple(p.name for p in params if p.kind is p.KEYWORD_ONLY)
    return pos, kw


def failures(version: str | None = None) -> list[str]:
    """What differs from the SGLang the plugin was written against ([] when nothing does)."""
    import dataclasses

    if version is None:
        import sglang

        version = sglang.__version__
    if version != SGLANG_VERSION:
        return [f"sglang {version} is installed; expected {SGLANG_VERSION}"]
    out = []
    for target, want in PINNED.items():
        try:
            got = parameters(resolve(target))
        except (ImportError, AttributeError) as e:
            out.append(f"{target}: not found ({e})")
            continue
        if got != want:
            out.append(f"{target}: parameters {got}, expected {want}")
    for target, want in FIELDS.items():
        try:
            fields = {f.name for f in dataclasses.fields(resolve(target))}
        except (ImportError, AttributeError, TypeError) as e:
            out.append(f"{target}: not a dataclass ({e})")
            continue
        missing = [f for f in want if f not in fields]
        if missing:
            out.append(f"{target}: no field {missing}")
    return out
