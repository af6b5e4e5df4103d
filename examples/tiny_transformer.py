"""Loss surface of a tiny transformer language model with its own loss, through the Python API.

    python examples/tiny_transformer.py --out /tmp/lm
    mpiexec -n 2 python examples/tiny_transformer.py --out /tmp/lm_mpi

Sequences of 12 tokens over a vocabulary of 16 follow a hidden rule (each token is
the one before it plus a per-sequence step, modulo 16); a 2-layer causal
transformer learns to predict the next token.  The loss is the model's own:
token-level cross-entropy over (batch, time, vocabulary) logits, and accuracy is
the fraction of tokens predicted right.  Then the top three eigenvalues of the Hessian of that
loss at the trained model (``landscape.hessian_eigs``), the ranks sharing the sequences.
"""

import argparse
import os

import torch
from torch import nn

from landscape.api import hessian_eigs, loss_surface

VOCAB, LENGTH = 16, 12


class TinyLM(nn.Module):
    def __init__(self, width: int = 32, layers: int = 2):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, width)
        self.position = nn.Parameter(torch.randn(LENGTH, width) * 0.1)
        layer = nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, VOCAB)
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(LENGTH), persistent=False)

    def forward(self, tokens):
        h = self.embed(tokens) + self.position[: tokens.shape[1]]
        return self.head(self.blocks(h, mask=self.causal[: tokens.shape[1], : tokens.shape[1]], is_causal=True))


def next_token_loss(logits, targets):
    """Mean cross-entropy over every predicted token of the batch."""
    return nn.functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def token_data(n: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    start = torch.randint(0, VOCAB, (n, 1), generator=g)
    step = torch.randint(1, 4, (n, 1), generator=g)
    seq = (start + step * torch.arange(LENGTH + 1)) % VOCAB
    return seq[:, :-1], seq[:, 1:]  # inputs, next tokens


def trained_model() -> nn.Module:
    torch.manual_seed(0)
    torch.set_num_threads(1)  # the same weights on every rank
    model = TinyLM()
    x, y = token_data(512, seed=1)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(150):
        batch = slice((step * 64) % 512, (step * 64) % 512 + 64)
        opt.zero_grad()
        next_token_loss(model(x[batch]), y[batch]).backward()
        opt.step()
    return model.eval()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="lm_out")
    p.add_argument("--grid", default="-1:1:9")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    surface = loss_surface(
        trained_model(),
        token_data(256, seed=2),
        next_token_loss,
        test=token_data(128, seed=3),
        x=args.grid,
        y=args.grid,
        surf_file=os.path.join(args.out, "lm.h5"),
        # settings given rather than measured (auto): the same bits on any number of ranks and machines
        kernel="reference",
        batch_size=64,
        points_per_pass=1,
        quiet=True,
    ).surface
    mid = (len(surface.x) // 2, len(surface.y) // 2)
    print(
        f"next-token loss at the trained model {surface.values['train_loss'][mid]:.3f} "
        f"(accuracy {surface.values['train_acc'][mid]:.1f} %), highest on the grid "
        f"{surface.values['train_loss'].max():.3f}"
    )
    # The curvature at the same point: the Hessian of the same loss over the same 256 sequences.
    top = hessian_eigs(trained_model(), token_data(256, seed=2), next_token_loss, k=3, which="top", tol=1e-4)["top"]
    print(
        f"top Hessian eigenvalues {', '.join(f'{v:.4g}' for v in top.values)} "
        f"({'converged' if top.converged else 'not converged: ' + top.note}, {top.products} products)"
    )


if __name__ == "__main__":
    main()
