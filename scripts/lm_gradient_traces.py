#!/usr/bin/python3
"""Language-model gradient traces for sparsecoll's estimator tests and benchmarks.

Trains a small word-level LSTM language model with W simulated data-parallel workers and, at
chosen iterations, writes each worker's local gradient to a trace file in the .sccltrace format of
scripts/gradient_traces.py (whose writer and reader this script imports; the format is described
there and in docs/gradient_traces.md). The worker/step protocol is the same as there: each global
batch is split into W contiguous shards, worker w runs forward/backward on shard w alone, and the
optimizer steps on the mean of the W worker gradients. Iteration 1 is the gradient at
initialization.

Text: every file of /usr/share/common-licenses (Debian's base-files package, present on every
Debian system; the GPL, LGPL, Apache, Artistic, MPL, ... licence texts, ~48,000 words), read in
sorted file-name order, lower-cased and split into words and punctuation. Nothing is downloaded.
Vocabulary: the --vocab - 1 most frequent tokens (ties broken alphabetically) plus <unk>.

Model (default sizes, 122,088 float32 parameters):
    embedding(V=1000, 32) -> LSTM(32 -> 64, one layer) -> linear(64 -> V)
Parameters are concatenated in model.parameters() order: embedding.weight, lstm.weight_ih_l0,
lstm.weight_hh_l0, lstm.bias_ih_l0, lstm.bias_hh_l0, decoder.weight, decoder.bias.
The embedding gradient is row-sparse (rows of tokens absent from a worker's batch are exactly
zero), the decoder's is dense: the mix of exact zeros and heavy tails that distribution-fitted
thresholds find hardest, unlike the CNN of gradient_traces.py.
--model transformer: a causal Transformer instead (token + learned position embeddings of width
--embed, --layers post-norm encoder layers with --heads heads and feed-forward --hidden, a causal
mask, an untied decoder); --optimizer adam trains with Adam; --text/--pattern/--max-tokens pick
other texts (scripts/estimators_unseen.sh uses both, on Perl's and Python's documentation).
Training: truncated back-propagation through time over --bptt tokens, batch --batch sequences
per worker (random windows of the token stream, numpy RandomState(seed)), SGD with momentum and
gradient-norm clipping 0.25 of the averaged gradient (as the PyTorch word-language-model example).
Determinism: torch.manual_seed(seed), torch.use_deterministic_algorithms(True), one intra-op
thread by default; the same command writes the same bytes on the same torch build.

Usage:
    /usr/bin/python3 scripts/lm_gradient_traces.py --out tests/data/traces_lm \
        --iterations 1,296,297,298,299,300 --workers 2
(296-300: consecutive steps for the error-feedback mode of perf/estimator_perf; tracing more
iterations does not change the training, so the other files stay byte-identical.)
    /usr/bin/python3 scripts/gradient_traces.py --stats tests/data/traces_lm   # Markdown table
"""

import argparse
import collections
import glob
import math
import os
import re
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gradient_traces import parse_iterations, write_trace  # noqa: E402  (same trace format)

DEFAULT_TEXT_DIR = "/usr/share/common-licenses"
TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[^\sa-z0-9]")


def load_tokens(text_dir, pattern="*", max_tokens=0):
    """The regular files of text_dir matching the glob pattern (every file by default), in sorted
    order, lower-cased and tokenized; the first max_tokens tokens when max_tokens > 0."""
    tokens = []
    for path in sorted(glob.glob(os.path.join(glob.escape(text_dir), pattern))):
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                tokens.extend(TOKEN.findall(f.read().lower()))
        if 0 < max_tokens <= len(tokens):
            del tokens[max_tokens:]
            break
    if len(tokens) < 1000:
        raise SystemExit(f"{text_dir}/{pattern}: only {len(tokens)} tokens")
    return tokens


def build_vocabulary(tokens, size):
    """The size - 1 most frequent tokens (ties alphabetical) and <unk> at index 0."""
    counts = collections.Counter(tokens)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:size - 1]
    words = ["<unk>"] + [word for word, _ in ranked]
    return {word: index for index, word in enumerate(words)}


def build_model(torch, args, vocab):
    """The --model network: "lstm" (the committed traces' model) or "transformer"."""
    if args.model == "transformer":
        return build_transformer(torch, vocab, args.embed, args.hidden, args.layers, args.heads,
                                 args.bptt)
    embed, hidden = args.embed, args.hidden
    nn = torch.nn

    class LstmLanguageModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocab, embed)
            self.lstm = nn.LSTM(embed, hidden, batch_first=True)
            self.decoder = nn.Linear(hidden, vocab)

        def forward(self, x):
            output, _ = self.lstm(self.embedding(x))
            return self.decoder(output)

    return LstmLanguageModel()


def build_transformer(torch, vocab, d_model, feedforward, layers, heads, context):
    """A causal Transformer language model: token + learned position embeddings, `layers`
    post-norm encoder layers with a causal mask, and an untied linear decoder."""
    nn = torch.nn

    class TransformerLanguageModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocab, d_model)
            self.position = nn.Embedding(context, d_model)
            layer = nn.TransformerEncoderLayer(d_model, heads, feedforward, dropout=0.0,
                                               batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.decoder = nn.Linear(d_model, vocab)
            mask = torch.triu(torch.full((context, context), float("-inf")), diagonal=1)
            self.register_buffer("causal_mask", mask)

        def forward(self, x):
            length = x.shape[1]
            positions = torch.arange(length, device=x.device)
            hidden = self.embedding(x) + self.position(positions)
            hidden = self.encoder(hidden, mask=self.causal_mask[:length, :length])
            return self.decoder(hidden)

    return TransformerLanguageModel()


def flat_gradient(model):
    return np.concatenate([p.grad.detach().reshape(-1).numpy() for p in model.parameters()])


def train(args):
    import torch

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    tokens = load_tokens(args.text, args.pattern, args.max_tokens)
    vocabulary = build_vocabulary(tokens, args.vocab)
    stream = np.array([vocabulary.get(t, 0) for t in tokens], dtype=np.int64)
    model = build_model(torch, args, len(vocabulary))
    count = sum(p.numel() for p in model.parameters())
    if args.optimizer == "adam":
        optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    loss_fn = torch.nn.CrossEntropyLoss()
    wanted = sorted(set(args.iterations))
    if wanted and wanted[-1] > args.steps:
        raise SystemExit(f"iteration {wanted[-1]} is beyond the last step ({args.steps})")
    os.makedirs(args.out, exist_ok=True)
    print(f"text: {len(tokens)} tokens, vocabulary {len(vocabulary)} "
          f"({100.0 * float((stream == 0).mean()):.1f}% <unk>); model: {count} parameters; "
          f"{args.workers} workers x batch {args.batch} x bptt {args.bptt}; {args.steps} steps; "
          f"traces at {wanted} -> {args.out}")
    rng = np.random.RandomState(args.seed)
    started = time.time()
    for step in range(args.steps):
        iteration = step + 1
        starts = rng.randint(0, len(stream) - args.bptt - 1, size=args.workers * args.batch)
        windows = np.stack([stream[s:s + args.bptt + 1] for s in starts])
        grads, losses = [], []
        for worker in range(args.workers):
            shard = torch.from_numpy(windows[worker * args.batch:(worker + 1) * args.batch])
            model.zero_grad(set_to_none=True)
            logits = model(shard[:, :-1])
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), shard[:, 1:].reshape(-1))
            loss.backward()
            losses.append(float(loss))
            grads.append([p.grad.detach().clone() for p in model.parameters()])
            if iteration in wanted:
                path = os.path.join(args.out,
                                    f"{args.prefix}_it{iteration:05d}_w{worker}.sccltrace")
                write_trace(path, flat_gradient(model), iteration, worker, args.workers)
        for index, p in enumerate(model.parameters()):
            p.grad = torch.stack([g[index] for g in grads]).mean(0)
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        optimizer.step()
        if iteration in wanted or iteration % args.log_every == 0 or iteration == args.steps:
            loss = sum(losses) / len(losses)
            print(f"iteration {iteration:5d}  loss {loss:.4f}  perplexity {math.exp(loss):.1f}  "
                  f"({time.time() - started:.1f} s)", flush=True)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="traces_lm", help="output directory")
    parser.add_argument("--workers", type=int, default=2, help="simulated workers (default 2)")
    parser.add_argument("--batch", type=int, default=16, help="sequences per worker (default 16)")
    parser.add_argument("--bptt", type=int, default=35, help="tokens per sequence (default 35)")
    parser.add_argument("--iterations", type=parse_iterations, default=[1, 300],
                        help="comma-separated 1-based iterations to trace (default 1,300)")
    parser.add_argument("--steps", type=int, default=300, help="optimizer steps (default 300)")
    parser.add_argument("--vocab", type=int, default=1000, help="vocabulary size (default 1000)")
    parser.add_argument("--embed", type=int, default=32, help="embedding size (default 32)")
    parser.add_argument("--hidden", type=int, default=64,
                        help="LSTM hidden size, or the Transformer's feed-forward size (default 64)")
    parser.add_argument("--model", choices=("lstm", "transformer"), default="lstm",
                        help="network (default lstm; --embed is the Transformer's model width)")
    parser.add_argument("--layers", type=int, default=2, help="Transformer layers (default 2)")
    parser.add_argument("--heads", type=int, default=4, help="Transformer heads (default 4)")
    parser.add_argument("--optimizer", choices=("sgd", "adam"), default="sgd",
                        help="sgd (with --momentum) or adam (default sgd)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--lr", type=float, default=1.0, help="learning rate (default 1.0)")
    parser.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (default 0.9)")
    parser.add_argument("--clip", type=float, default=0.25, help="gradient-norm clip (0.25)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--text", default=DEFAULT_TEXT_DIR, help="directory of text files")
    parser.add_argument("--pattern", default="*", help="glob of the files of --text (default *)")
    parser.add_argument("--max-tokens", type=int, default=0,
                        help="use only the first N tokens (default 0: all)")
    parser.add_argument("--prefix", default="lstm_lm", help="trace file name prefix")
    parser.add_argument("--log-every", type=int, default=50, help="loss print interval")
    args = parser.parse_args(argv)
    if min(args.workers, args.batch, args.bptt, args.steps, args.threads, args.layers,
           args.heads) < 1 or args.vocab < 2 or args.max_tokens < 0:
        parser.error("sizes and counts must be positive")
    if args.model == "transformer" and args.embed % args.heads != 0:
        parser.error("--embed must be a multiple of --heads for the Transformer")
    train(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
