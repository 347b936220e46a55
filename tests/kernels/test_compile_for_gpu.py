"""The SGLang plugin's kernels compiled for the H100/H200 (sm_90) from the CPU, with Triton's own
compiler and ptxas: the interpreter the other kernel tests use runs a kernel as Python and misses
what only the compiler refuses (types, constexpr branches, scans, atomics), which on the GPU
would stop SGLang's worker at start (hooks.guard_worker). Every dtype the plugin passes: rows
from SGLang as int32 or int64, accept lengths as int32; the plan's plain and verify-tree forms,
and the tree plan, mask, links and accept kernels. In a child process with the interpreter
off (these tests' conftest turns it on, and then @triton.jit makes no compilable kernel)."""

from __future__ import annotations

import os
import subprocess
import sys

COMPILE = r'''
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from turnspec.kernels import plan_lookup, tree_accept, tree_links, tree_mask, tree_plan

LOOKUP = {"BLOCK": 1024, "NMIN": 2, "NMAX": 4, "CAP": 16}
CHOOSE = {"hist_ptr": "*i64", "len_ptr": "*i64", "blocks_ptr": "*i64", "lp_ptr": "*fp32",
          "flags_ptr": "*i32", "counts_ptr": "*i64", "cont_ptr": "*i64", "branch_ptr": "*i1",
          "hist_stride": "i64", "blocks_stride": "i64", "below": "fp32"}
APPEND = {"hist_ptr": "*i64", "len_ptr": "*i64", "rows_ptr": "*i64", "counts_ptr": "*i32",
          "hist_stride": "i64", "cap": "i64"}
CASES = [(plan_lookup._choose_kernel, {**CHOOSE, "rows_ptr": rows},
          {"WIDTH": w, "WP": 16, **LOOKUP, "AGREE": 2, "MATCH_MIN": 6, "TREE": tree})
         for rows in ("*i32", "*i64") for w in (1, 15) for tree in (False, True)]
CASES += [(plan_lookup._append_kernel, {**APPEND, "tok_ptr": tok},
           {"STRIDE": s, "SP": 16, "HAS_COUNTS": c})
          for s, c, tok in ((1, False, "*i64"), (1, False, "*i32"), (16, True, "*i64"))]
# verify trees: the mask (SGLang's layout), the accept walk and the plan, at 16 and 32 nodes
CASES += [(tree_mask._tree_mask_kernel, {"anc_ptr": anc, "lens_ptr": "*i64", "offs_ptr": "*i64",
           "out_ptr": "*u8", "sa_b": "i64", "sa_q": "i64", "sa_k": "i64", "cap": "i64"},
           {"N": n, "BLOCK": n, "FROM_PARENTS": fp}) for anc, fp in (("*u8", False), ("*i64", True))
          for n in (16, 32)]
CASES += [(tree_accept._tree_accept_kernel, {n: "*i64" for n in ("tok_ptr", "par_ptr", "tgt_ptr",
           "path_ptr", "len_ptr")}, {"N": 16, "BLOCK": 16})]
CASES += [(tree_accept._tree_settle_kernel, {**{n: "*i64" for n in ("tok_ptr", "par_ptr", "tgt_ptr",
           "draft_ptr", "flat_ptr", "count_ptr")}, "branch_ptr": "*i1", "vocab": "i32"},
           {"N": n, "BLOCK": n}) for n in (16, 32)]
CASES += [(tree_plan._tree_plan_kernel, {"blocks_ptr": "*i64", "guess_ptr": "*i64",
           "gs_row": "i32", "gs_pos": "i32", "lp_ptr": "*fp32", "cont_ptr": "*i64",
           "unr_ptr": "*fp32", "ok_ptr": "*u8",
           "lanes_ptr": "*i32", "tok_ptr": "*i64", "par_ptr": "*i64", "dep_ptr": "*i64",
           "C": "i32"}, {"TIE": tree_plan.TIE, "W": w, "G": 3, "CP": cp, "NP": np_})
          for w, cp, np_ in ((15, 512, 16), (31, 2048, 32))]  # DFLASH blocks of 16 and 32
CASES += [(tree_links._tree_links_kernel, {n: "*i64" for n in ("par_ptr", "first_ptr", "sib_ptr")},
           {"N": n, "NP": n}) for n in (16, 32)]
for kernel, types, consts in CASES:
    names = kernel.arg_names
    sig = {n: "constexpr" if n in consts else types[n] for n in names}
    src = ASTSource(fn=kernel, signature=sig,
                    constexprs={(names.index(n),): v for n, v in consts.items()})
    assert "cubin" in triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm
    print("compiled", kernel.__name__, consts)
'''


def test_the_plugin_kernels_compile_for_sm90() -> None:
    env = {**os.environ, "TRITON_INTERPRET": "0", "TRITON_DEFAULT_FP_FUSION": "1"}
    done = subprocess.run([sys.executable, "-c", COMPILE], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("compiled") == 22
