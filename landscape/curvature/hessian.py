"""Hessian-vector products of a model's mean loss over a whole data set, exactly.

The loss is the mean over *all* samples of the per-sample loss (a user's loss callable: its batch mean
weighted by the batch size), so a product is the sum over batches of each batch's product, divided
by the number of samples: the Hessian of the same function a loss surface plots at its centre, not
of one mini-batch.  Each batch's product is a double backward (Pearlmutter's trick: the gradient of
``g(w) · v``) through ``functional_call``, with less overhead per product than ``torch.func.jvp`` of
``torch.func.grad`` (forward-over-reverse) and the same values.  BatchNorm layers use their running
statistics (the model in eval mode), as at a grid point of a surface: the function differentiated is the
one evaluated.

The weights do not move between products, so the gradient g(w) of a batch and the graph that made it
are the same for every v: a batch's graph is built once and kept, and each later product is one
backward through it (``grad(g, w, grad_outputs=v)``), half or less of the cost of forward, backward
and double backward.  On a CPU a batch's graph is built in pieces of samples whose largest activation
takes at most ``PIECE_BYTES`` (see there), so that a product's temporaries are reused from the heap
instead of mapped afresh at every product.  Kept graphs hold the forward's and the backward's
activations, several times the memory of a forward pass, so they are kept only within ``graph_budget``
bytes; a piece beyond it is recomputed at every product, with the same values.  By default the budget
is half the memory free on the device when the first product is made, shared among the processes that
may run beside this one (the node's cores over this process's threads, as ranks are given threads):
whoever knows the ranks (``workflows.curvature.sharded_hessian``) passes the share exactly.

Vectors are flat float64 numpy arrays over the parameters that require gradients, in
``named_parameters`` order: what ``scipy.sparse.linalg`` expects.  Data parallelism is applied from
outside: ``reduce`` (a sum over ranks of a float64 array, in place) lets each rank hold a shard of the
samples; nothing here knows about ranks.
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Callable

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from ..data import Samples
from ..errors import InputError
from ..losses import Loss

DTYPES = {"float32": torch.float32, "float64": torch.float64}

# The bytes of a piece's largest activation on a CPU.  A product allocates and frees temporaries of
# the activations' sizes; glibc's malloc maps a block above its mmap threshold (at most 32 MiB) afresh
# and unmaps it when freed, so each product would fault in and zero every page of them again, which can
# take more of a product's time than its arithmetic.  Blocks of half that size come from the heap and
# are reused (once the threshold has risen past them, as it does when the first is freed, or at once
# under ``landscape.heap.keep_freed_memory``).  A GPU's caching allocator reuses blocks of any size:
# there a batch is one piece.
PIECE_BYTES = 16 << 20


def _twice_differentiable_attention():
    """Attention through its plain-math kernel: the fused (flash, memory-efficient) kernels have no
    second derivative, and a product differentiates twice.  The values are the same function."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # torch < 2.3: no fused kernels to avoid through this switch
        from contextlib import nullcontext

        return nullcontext()
    return sdpa_kernel(SDPBackend.MATH)


def free_memory(device: torch.device | str) -> int:
    """Bytes free on ``device`` now: the kernel's ``MemAvailable`` on a CPU, the allocator's free
    memory on a GPU (0 where it cannot be read: nothing is then kept by default)."""
    device = torch.device(device)
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 0


class _SavedBytes:
    """Counts the bytes of the distinct storages autograd saves while it is active, less those of
    ``counted`` (storages by address that kept graphs already hold): the memory a kept graph adds
    (tensors the caller holds anyway, such as the inputs, are counted once too: an upper bound).

    The hook keeps a detached view of each saved tensor (the same storage; autograd restores the grad_fn
    when it unpacks).  Kept as it is, a tensor saved by the node that made it (a ReLU's output) would
    refer to that node's grad_fn, which owns the saved tensor: a reference cycle through C++ that no
    garbage collection breaks, so a kept graph would outlive its Hessian (pytorch/pytorch#115255)."""

    def __init__(self, counted: dict[int, int] | None = None):
        self.storages: dict[int, int] = {}
        self.counted = counted or {}

    def pack(self, tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        self.storages[storage.data_ptr()] = storage.nbytes()
        return tensor.detach()

    @property
    def total(self) -> int:
        return sum(size for address, size in self.storages.items() if address not in self.counted)

    def __enter__(self):
        self.hooks = torch.autograd.graph.saved_tensors_hooks(self.pack, lambda tensor: tensor)
        self.hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self.hooks.__exit__(*exc)


class Hessian:
    """``H v`` of the mean loss of ``model`` over ``samples``; ``products`` counts the calls.

    ``samples`` may be this rank's shard: ``count`` is then the number of samples over all ranks and
    ``reduce`` sums a numpy array over ranks in place.
    """

    def __init__(
        self,
        model: nn.Module,
        samples: Samples,
        loss: Loss | str = "crossentropy",
        batch_size: int = 1024,
        dtype: str = "float64",
        device: str = "cpu",
        count: int | None = None,
        reduce: Callable[[np.ndarray], None] | None = None,
        state: dict | None = None,
        copy_model: bool = True,
        graph_budget: int | None = None,
    ):
        """``state``: tensors by name that replace the model's parameters or buffers (a grid point's
        weights); ``copy_model=False`` uses ``model`` as it is (already on ``device`` in ``dtype``, in eval
        mode, and not changed here: the surface kernel's private copy).  ``graph_budget``: bytes of
        batches' gradient graphs kept between products (None: half the device's free memory at the first
        product, shared with the processes that may run beside this one; 0: none kept, every product recomputes
        its gradients)."""
        if dtype not in DTYPES:
            raise ValueError(f"dtype={dtype}: expected float32 or float64")
        self.dtype, self.device = DTYPES[dtype], torch.device(device)
        self.model = (copy.deepcopy(model).to(self.device, self.dtype) if copy_model else model).eval()
        self.loss = loss if isinstance(loss, Loss) else Loss(loss)
        self.names = [n for n, p in self.model.named_parameters() if p.requires_grad]
        self.params = {n: p.detach() for n, p in self.model.named_parameters() if p.requires_grad}
        self.fixed = {n: b for n, b in self.model.named_buffers()}
        self.fixed.update({n: p.detach() for n, p in self.model.named_parameters() if not p.requires_grad})
        for name, value in (state or {}).items():
            target = self.params if name in self.params else self.fixed
            target[name] = value.detach().to(self.device, self.dtype if value.is_floating_point() else None).clone()
        self.shapes = [self.params[n].shape for n in self.names]
        self.sizes = [self.params[n].numel() for n in self.names]
        self.dim = int(sum(self.sizes))
        if self.dim == 0:
            raise InputError(
                f"the model ({type(self.model).__name__}) has no trainable parameters: a Hessian needs at least one"
            )
        inputs = samples.inputs.to(self.device, self.dtype if samples.inputs.is_floating_point() else None)
        targets = samples.targets.to(self.device)
        if targets.is_floating_point():
            targets = targets.to(self.dtype)
        self.batch_size = batch_size
        self.batches = [
            (inputs[i : i + batch_size], targets[i : i + batch_size]) for i in range(0, len(targets), batch_size)
        ]
        self.count = count if count is not None else len(targets)
        self.reduce = reduce or (lambda array: None)
        self.products = 0
        if graph_budget is not None and graph_budget < 0:
            raise ValueError(f"graph_budget={graph_budget}: expected a number of bytes >= 0, or None")
        self.graph_budget = graph_budget
        self._graphs: dict[int, tuple[torch.Tensor, ...]] = {}  # piece index -> its kept gradient
        self._pieces: list[tuple[torch.Tensor, torch.Tensor]] | None = None  # the batches' pieces, made once
        self._leaves: list[torch.Tensor] | None = None
        self.graph_bytes = 0  # bytes held by the kept graphs (an upper bound)
        self._counted: dict[int, int] = {}  # the storages they hold, by address (each counted once)

    def _batch_loss(self, params: dict, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        output = functional_call(self.model, {**params, **self.fixed}, (x,))
        return self.loss.total(output, y)[0] / self.count

    def _unflat(self, v: np.ndarray) -> dict[str, torch.Tensor]:
        flat = torch.as_tensor(np.ascontiguousarray(v), dtype=self.dtype, device=self.device)
        return {n: t.view(s) for n, t, s in zip(self.names, torch.split(flat, self.sizes), self.shapes)}

    def _flat(self, tensors: dict[str, torch.Tensor]) -> np.ndarray:
        return torch.cat([tensors[n].reshape(-1) for n in self.names]).to("cpu", torch.float64).numpy()

    def flat_params(self) -> np.ndarray:
        """The parameters as one float64 vector (the order of every flat vector here)."""
        return self._flat(self.params)

    def loss_and_gradient(self, flat: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """The mean loss and its gradient (flat) over all samples, at the parameters or at ``flat``."""
        params = self.params if flat is None else self._unflat(flat)
        total, gradient = 0.0, None
        for x, y in self.batches:
            g, value = torch.func.grad_and_value(self._batch_loss)(params, x, y)
            total += float(value)
            flat = self._flat(g)
            gradient = flat if gradient is None else gradient + flat
        gradient = gradient if gradient is not None else np.zeros(self.dim)
        packed = np.concatenate([[total], gradient])
        self.reduce(packed)
        return float(packed[0]), packed[1:]

    @torch.no_grad()
    def mean_loss(self, flat: np.ndarray | None = None) -> float:
        """The mean loss over all samples (all ranks), at the parameters or at ``flat``: no gradient."""
        params = self.params if flat is None else self._unflat(flat)
        total = np.array([sum(float(self._batch_loss(params, x, y)) for x, y in self.batches)])
        self.reduce(total)
        return float(total[0])

    @torch.no_grad()
    def error(self, flat: np.ndarray | None = None) -> float:
        """The 0-1 error in percent over all samples (NaN without class labels), at ``flat``."""
        params = self.params if flat is None else self._unflat(flat)
        wrong = np.zeros(2)
        for x, y in self.batches:
            if y.is_floating_point():
                return math.nan
            output = functional_call(self.model, {**params, **self.fixed}, (x,))
            wrong += [float((output.argmax(dim=-1) != y).sum()), len(y)]
        self.reduce(wrong)
        return 100.0 * wrong[0] / wrong[1] if wrong[1] else math.nan

    def subsets(self, m: int) -> list[Hessian]:
        """This rank's samples in consecutive batches of ``m`` (a last batch of fewer left out), each as a
        Hessian of its own mean loss, on this rank alone (no ``reduce``)."""
        inputs = torch.cat([x for x, _ in self.batches]) if self.batches else None
        targets = torch.cat([y for _, y in self.batches]) if self.batches else None
        parts = []
        for start in range(0, (len(targets) if targets is not None else 0) - m + 1, m):
            part = copy.copy(self)
            x, y = inputs[start : start + m], targets[start : start + m]
            part.batches = [
                (x[i : i + self.batch_size], y[i : i + self.batch_size]) for i in range(0, m, self.batch_size)
            ]
            part.count, part.reduce, part.products = m, (lambda array: None), 0
            part._graphs, part._leaves, part._pieces, part.graph_bytes, part._counted = {}, None, None, 0, {}
            parts.append(part)
        return parts

    def _activation_bytes(self, x: torch.Tensor, y: torch.Tensor) -> int:
        """Bytes per sample of the largest tensor that the forward of (at most) two samples saves for its
        backward with the samples along its first dimension: the largest activation."""
        x, y = x[:2], y[:2]
        largest = 0

        def pack(tensor: torch.Tensor) -> torch.Tensor:
            nonlocal largest
            if tensor.dim() and tensor.shape[0] == len(x):
                largest = max(largest, tensor.numel() * tensor.element_size())
            return tensor.detach()

        leaves = {n: p.detach().requires_grad_(True) for n, p in self.params.items()}
        with torch.enable_grad(), _twice_differentiable_attention():
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
                self._batch_loss(leaves, x, y)
        return largest // max(1, len(x))

    def pieces(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The batches cut into the pieces whose graphs the products keep: on a CPU, each batch in equal
        parts of samples whose largest activation takes at most ``PIECE_BYTES``; on a GPU, the batches."""
        if self._pieces is None:
            self._pieces = list(self.batches)
            if self.device.type == "cpu" and self.batches:
                per_sample = self._activation_bytes(*self.batches[0])
                most = max(1, PIECE_BYTES // per_sample) if per_sample else len(self.batches[0][1])
                self._pieces = []
                for x, y in self.batches:
                    parts = -(-len(y) // most)  # the fewest equal parts of at most `most` samples
                    self._pieces += zip(x.tensor_split(parts), y.tensor_split(parts))
        return self._pieces

    def _gradient(self, index: int, x: torch.Tensor, y: torch.Tensor) -> tuple[tuple, bool]:
        """Piece ``index``'s gradient with its graph (so that it can be differentiated again), and whether
        that graph is kept: built at the first product and kept while the budget allows."""
        if index in self._graphs:
            return self._graphs[index], True
        if self._leaves is None:  # one set of leaves: the kept graphs all hang from them
            self._leaves = [self.params[n].detach().requires_grad_(True) for n in self.names]
            if self.graph_budget is None:
                neighbours = 1 if self.device.type == "cuda" else (os.cpu_count() or 1) // torch.get_num_threads()
                self.graph_budget = free_memory(self.device) // (2 * max(1, neighbours))
        leaves = dict(zip(self.names, self._leaves))
        with _SavedBytes(self._counted) as saved:
            gradient = torch.autograd.grad(
                self._batch_loss(leaves, x, y), self._leaves, create_graph=True, allow_unused=True
            )
        keep = self.graph_bytes + saved.total <= self.graph_budget
        if keep:
            self._graphs[index] = gradient
            self.graph_bytes += saved.total
            self._counted.update(saved.storages)
        return gradient, keep

    def matvec(self, v: np.ndarray) -> np.ndarray:
        """``H v`` over all samples (all ranks), as a flat float64 array."""
        flat = torch.as_tensor(np.ascontiguousarray(v, dtype=np.float64).reshape(-1), device=self.device)
        if flat.numel() != self.dim:
            raise ValueError(f"a vector of {flat.numel()} entries: expected {self.dim} (the parameters)")
        tangent = [t.view(s) for t, s in zip(torch.split(flat.to(self.dtype), self.sizes), self.shapes)]
        out = torch.zeros(self.dim, dtype=torch.float64, device=self.device)
        with torch.enable_grad(), _twice_differentiable_attention():
            for index, (x, y) in enumerate(self.pieces()):
                gradient, kept = self._gradient(index, x, y)
                # a parameter the loss does not reach, or whose gradient is constant, adds nothing
                live = [i for i, g in enumerate(gradient) if g is not None and g.requires_grad]
                if not live:
                    continue
                product = torch.autograd.grad(
                    [gradient[i] for i in live],
                    self._leaves,
                    grad_outputs=[tangent[i] for i in live],
                    retain_graph=kept,
                    allow_unused=True,
                )
                out += torch.cat(
                    [(p if p is not None else torch.zeros_like(q)).reshape(-1) for p, q in zip(product, self._leaves)]
                )
        out = out.cpu().numpy()
        self.reduce(out)
        self.products += 1
        return out

    def operator(self):
        """The Hessian as a ``scipy.sparse.linalg.LinearOperator`` (symmetric, float64)."""
        from scipy.sparse.linalg import LinearOperator

        return LinearOperator((self.dim, self.dim), matvec=self.matvec, rmatvec=self.matvec, dtype=np.float64)


__all__ = ["Hessian", "DTYPES", "free_memory"]
