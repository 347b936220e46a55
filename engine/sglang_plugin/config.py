"""What the plugin does inside SGLang, parsed once from the environment its scheduler processes
inherit (SGLang passes a plugin no arguments, and its spawned schedulers see only the
environment of the process that started them).

    TURNSPEC_SGLANG_SPEC      off (default) | lookup | trees: speculation mode (trees: each
                              greedy row verifies a token tree, trees.py; the plan on the GPU)
    TURNSPEC_SPEC_LOOKUP_BELOW  the lookup rule's threshold (SpecOptions.lookup_below)
    TURNSPEC_SGLANG_PLAN_AT   device (default) | verify: where the plan runs (hooks.py): on the
                              GPU, or on the host before SGLang loads the verify
    TURNSPEC_SGLANG_DATASTORE       a datastore of earlier answers (--spec-datastore PATH): its
                                    continuation is a tree branch (trees only; datastore.py)
    TURNSPEC_SGLANG_DATASTORE_LEARN N: the served answers join it, the newest N tokens kept
                                    (--spec-datastore-learn; 0 or unset: off)
    TURNSPEC_SGLANG_WIDTH     fixed (default) | served | plain: every decode step verifies
                              DFLASH's block (or trees), or each step takes that or plain
                              decode, whichever commits more tokens a second at its batch size
                              as served (plain.py), or (a check of what the plain step costs
                              against SGLang without speculation) every decode step is plain
    TURNSPEC_SGLANG_APPEND_GRAPHS   1: the drafter's context write after each decode step
                                    replayed from CUDA graphs (append_graphs.py; 0 or unset:
                                    SGLang's eager write)
    TURNSPEC_SGLANG_EARLY_FIRST_TOKEN N: a decode step of at most N rows right after a
                                    prefill waits for the prefill's first token to go out
                                    (first_token.py; 0 or unset: SGLang's overlap)
    TURNSPEC_SGLANG_SYNC_CHECK      1: count the host syncs inside the plugin's step work
                                    (state.sync_free; a check for tests, 0 or unset: off)

`turnspec serve --engine sglang` sets these from its own flags (engine/sglang_args.py); a user of
SGLang's own server exports them before `python -m sglang.launch_server`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from turnspec.engine.spec.options import SpecOptions

MODES = ("off", "lookup", "trees")
PLAN_POINTS = ("device", "verify")
WIDTHS = ("fixed", "served", "plain")
ENV_MODE = "TURNSPEC_SGLANG_SPEC"
ENV_LOOKUP_BELOW = "TURNSPEC_SPEC_LOOKUP_BELOW"
ENV_PLAN_AT = "TURNSPEC_SGLANG_PLAN_AT"
ENV_DATASTORE = "TURNSPEC_SGLANG_DATASTORE"
ENV_LEARN = "TURNSPEC_SGLANG_DATASTORE_LEARN"
ENV_SYNC_CHECK = "TURNSPEC_SGLANG_SYNC_CHECK"
ENV_WIDTH = "TURNSPEC_SGLANG_WIDTH"
ENV_APPEND_GRAPHS = "TURNSPEC_SGLANG_APPEND_GRAPHS"
ENV_EARLY = "TURNSPEC_SGLANG_EARLY_FIRST_TOKEN"


@dataclass(slots=True, frozen=True)
class PluginConfig:
    """`mode` "lookup": each greedy row verifies the speculation core's chosen block (the
    drafter's, or its prompt-lookup continuation) in place of the drafter's block; "trees": a
    token tree of the most likely nodes among the drafter's block, its swaps and the lookup
    continuation, in the same verify (trees.py; needs plan_at "device"). `plan_at`
    "device": the lookup and the rule run on the GPU over tokens kept there, so the host never
    waits; "verify": on the host, before SGLang loads the verify (hooks.py)."""
    mode: str = "off"
    lookup_below: float = SpecOptions().lookup_below
    plan_at: str = "device"
    datastore: str | None = None  # `datastore`: a store of earlier answers (a path)
    learn_tokens: int = 0  # > 0: served answers join the store, the newest this many tokens
    sync_check: bool = False  # count host syncs inside the plugin's step work (state.sync_free)
    width: str = "fixed"  # "served": plain decode where it commits more a second (plain.py);
    # "plain": every decode step plain (a check of the plain step's cost)
    append_graphs: bool = False  # the drafter's context writes from CUDA graphs (append_graphs.py)
    early_rows: int = 0  # > 0: a prefill's first token out before a decode of <= this many rows

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"{ENV_MODE}={self.mode!r}: expected one of {MODES}")
        if self.plan_at not in PLAN_POINTS:
            raise ValueError(f"{ENV_PLAN_AT}={self.plan_at!r}: expected one of {PLAN_POINTS}")
        if self.mode == "trees" and self.plan_at != "device":
            raise ValueError(f"{ENV_MODE}=trees plans on the GPU; expected {ENV_PLAN_AT}=device, "
                             f"got {self.plan_at!r}")
        SpecOptions(lookup_below=self.lookup_below)  # validates
        if (self.datastore or self.learn_tokens) and self.mode != "trees":
            raise ValueError(f"{ENV_DATASTORE} / {ENV_LEARN}: the store's continuation is a tree "
                             f"branch; expected {ENV_MODE}=trees, got {self.mode!r}")
        if self.width not in WIDTHS:
            raise ValueError(f"{ENV_WIDTH}={self.width!r}: expected one of {WIDTHS}")
        if self.width != "fixed" and self.mode == "off":
            raise ValueError(f"{ENV_WIDTH}={self.width} runs the plugin's plain decode step; "
                             f"expected {ENV_MODE}=lookup or trees, got 'off'")
        if self.append_graphs and self.mode == "off":
            raise ValueError(f"{ENV_APPEND_GRAPHS}=1 is the plugin's; expected {ENV_MODE}=lookup "
                             "or trees, got 'off'")
        if not isinstance(self.early_rows, int) or self.early_rows < 0:
            raise ValueError(f"{ENV_EARLY}={self.early_rows!r}: expected rows >= 0")
        if self.early_rows and self.mode == "off":
            raise ValueError(f"{ENV_EARLY}={self.early_rows} is the plugin's; expected "
                             f"{ENV_MODE}=lookup or trees, got 'off'")
        if not isinstance(self.learn_tokens, int) or self.learn_tokens < 0:
            raise ValueError(f"{ENV_LEARN}={self.learn_tokens!r}: expected tokens >= 0")

    @property
    def armed(self) -> bool:
        return self.mode != "off"

    def step_widths(self, block: int) -> tuple[int, ...]:
        """The verify widths a decode step may take, narrowest first: DFLASH's `block` (width
        "fixed"), that or plain decode's one token a row ("served"), plain decode only ("plain")."""
        return {"fixed": (block,), "served": (1, block), "plain": (1,)}[self.width]

    def options(self) -> SpecOptions:
        """The speculation core's options: whole blocks (SGLang verifies its block's full
        width), the lookup rule, one block a row."""
        return SpecOptions(min_confidence=0.0, lookup=True, lookup_below=self.lookup_below,
                           branches=1)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> PluginConfig:
        below = env.get(ENV_LOOKUP_BELOW)
        try:
            lookup_below = float(below) if below else SpecOptions().lookup_below
        except ValueError:
            raise ValueError(f"{ENV_LOOKUP_BELOW}={below!r}: expected a number") from None
        learn = env.get(ENV_LEARN) or "0"
        if not learn.isdigit():
            raise ValueError(f"{ENV_LEARN}={learn!r}: expected a number of tokens")
        early = env.get(ENV_EARLY) or "0"
        if not early.isdigit():
            raise ValueError(f"{ENV_EARLY}={early!r}: expected a number of rows")
        check, graphs = env.get(ENV_SYNC_CHECK) or "0", env.get(ENV_APPEND_GRAPHS) or "0"
        for name, value in ((ENV_SYNC_CHECK, check), (ENV_APPEND_GRAPHS, graphs)):
            if value not in ("0", "1"):
                raise ValueError(f"{name}={value!r}: expected 0 or 1")
        return cls(mode=env.get(ENV_MODE, "off") or "off", lookup_below=lookup_below,
                   plan_at=env.get(ENV_PLAN_AT, "device") or "device",
                   datastore=env.get(ENV_DATASTORE) or None, learn_tokens=int(learn),
                   sync_check=check == "1", width=env.get(ENV_WIDTH, "fixed") or "fixed",
                   append_graphs=graphs == "1", early_rows=int(early))

    def to_env(self) -> dict[str, str]:
        """The environment that arms the plugin in SGLang's processes with this config."""
        return {ENV_MODE: self.mode, ENV_LOOKUP_BELOW: repr(self.lookup_below),
                ENV_PLAN_AT: self.plan_at, ENV_DATASTORE: self.datastore or "",
                ENV_LEARN: str(self.learn_tokens), ENV_SYNC_CHECK: str(int(self.sync_check)),
                ENV_WIDTH: self.width, ENV_APPEND_GRAPHS: str(int(self.append_graphs)),
                ENV_EARLY: str(self.early_rows)}
