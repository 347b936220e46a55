"""The grammar tests use the root fixtures (smollm2_tokenizer, compiler); VOCAB_SIZE is
re-exported for their imports."""

from tests.conftest import VOCAB_SIZE

__all__ = ["VOCAB_SIZE"]
