"""Loss surface of a regression MLP through the Python API (runs as is, or under mpiexec).

    python examples/regression_mlp.py --out /tmp/regression
    mpiexec -n 2 python examples/regression_mlp.py --out /tmp/regression_mpi

Fits y = sin(3 x1) + x2^2 with an MLP, then computes the MSE surface around the fit.
"""

import argparse
import os

import torch
from torch import nn

from landscape.api import loss_surface


def data(n: int = 512):
    g = torch.Generator().manual_seed(0)
    x = torch.rand(n, 2, generator=g) * 2 - 1
    y = torch.sin(3 * x[:, :1]) + x[:, 1:] ** 2
    return (x[:384], y[:384]), (x[384:], y[384:])


def trained_mlp() -> nn.Module:
    torch.manual_seed(0)
    torch.set_num_threads(1)  # the same weights on every rank
    model = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))
    (x, y), _ = data()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(300):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return model


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="regression_out")
    p.add_argument("--grid", default="-1:1:11")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    train, test = data()
    surface = loss_surface(
        trained_mlp(),
        train,
        "mse",
        test=test,
        x=args.grid,
        y=args.grid,
        surf_file=os.path.join(args.out, "mlp.h5"),
        # settings given rather than measured (auto): the same bits on any number of ranks and machines
        kernel="reference",
        batch_size=512,
        points_per_pass=1,
        quiet=True,
    ).surface
    centre = surface.values["train_loss"][len(surface.x) // 2, len(surface.y) // 2]
    print(
        f"train MSE at the fit {centre:.4g}, highest on the grid {surface.values['train_loss'].max():.4g}; "
        f"quantities {sorted(surface.values)}"
    )


if __name__ == "__main__":
    main()
