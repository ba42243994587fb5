"""A WordPiece tokenizer trained on formal text (states and premises), saved in HF format.

General-purpose vocabularies split `Nat.succ_le_iff` or `⁻¹` into noise; one trained on
the corpus keeps frequent Lean identifiers and notation as single tokens.
"""
from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from tokenizers import BertWordPieceTokenizer
from tokenizers.processors import TemplateProcessing
from transformers import PreTrainedTokenizerFast

from prover.data.premise import GOAL_TOKEN, VAR_TOKEN

log = logging.getLogger(__name__)

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", VAR_TOKEN, GOAL_TOKEN]


def alphabet(texts: list[str], limit: int) -> list[str]:
    """The `limit` most frequent non-space characters, ties broken by the character itself."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(text)
    chars = [c for c in counts if not c.isspace()]
    return sorted(sorted(chars, key=lambda c: (-counts[c], c))[:limit])


def train_tokenizer(texts: Iterable[str], vocab_size: int, out_dir: str | Path,
                    min_frequency: int = 2, limit_alphabet: int = 2000) -> PreTrainedTokenizerFast:
    """Train on `texts`, save to `out_dir` (save_pretrained), return the loaded tokenizer.

    The same texts always give the same tokenizer.json. HF's trainer alone does not: it numbers
    the `##c` continuation pieces in hash-map order, and those ids break ties between equally
    frequent merges (huggingface/tokenizers#1794), so two runs differed in about 1% of a 4k
    vocabulary. Declaring the alphabet and every `##c` up front, in sorted order, fixes all ids
    before the first merge; the `##c` are then demoted from special tokens by rebuilding the
    tokenizer from the trained vocabulary.
    """
    texts = list(texts)
    chars = alphabet(texts, limit_alphabet)
    pieces = [f"##{c}" for c in chars]
    trainer = BertWordPieceTokenizer(lowercase=False, strip_accents=False, clean_text=True,
                                     handle_chinese_chars=False)
    trainer.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=min_frequency,
                                special_tokens=SPECIAL_TOKENS + pieces, initial_alphabet=chars,
                                limit_alphabet=len(chars), show_progress=False)
    wp = BertWordPieceTokenizer(vocab=trainer.get_vocab(), lowercase=False, strip_accents=False,
                                clean_text=True, handle_chinese_chars=False)
    # Training from scratch leaves no post-processor: add BERT's [CLS] a [SEP] (b [SEP]).
    cls_id, sep_id = wp.token_to_id("[CLS]"), wp.token_to_id("[SEP]")
    wp.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)])
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    # Wrapping the trained tokenizer object (not a vocab file) works the same across
    # transformers 4.x and 5.x, whose BertTokenizer constructors differ.
    tok = PreTrainedTokenizerFast(
        tokenizer_object=wp._tokenizer, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
        sep_token="[SEP]", mask_token="[MASK]",
        # <VAR>/<GOAL> must never be split by the pre-tokenizer into `<`, `VAR`, `>`.
        additional_special_tokens=[VAR_TOKEN, GOAL_TOKEN],
        model_input_names=["input_ids", "token_type_ids", "attention_mask"])
    tok.save_pretrained(str(out_dir))
    log.info("tokenizer: %d tokens, saved to %s", len(tok), out_dir)
    return tok


def load_tokenizer(path: str | Path) -> PreTrainedTokenizerFast:
    return PreTrainedTokenizerFast.from_pretrained(str(path))
