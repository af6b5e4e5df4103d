"""What a surface stores at each point: every quantity declared once.

A quantity is a *metric* measured on one *data set* (``train``, ``test``):
``train_loss`` is the metric ``loss`` on the training data.  Each metric says what
it is (long name, units) and what computes it; the surface file writes these as
dataset attributes, the plots take their words from them, and a new kind of
quantity (curvature maps: ``eig_max``...) is one ``register`` call, not an edit
of the schema, the writer and the plots.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError

DATA_SETS = ("train", "test")
DATA_WORDS = {"train": "training", "test": "test"}

# Units of a loss as computed: cross-entropy uses the natural logarithm.
LOSS_UNITS = {"crossentropy": "nats", "mse": "squared target units"}


@dataclass(frozen=True)
class Metric:
    """One kind of value at a grid point."""

    key: str  # the suffix of the dataset name: train_<key>
    label: str  # a few words for an axis: "loss", "accuracy"
    long_name: str  # "mean loss"
    units: str  # "%", or "loss" for the units of the loss evaluated
    computed_by: str  # "forward": the evaluation kernel's passes over the data
    derived_from: str = ""  # for a metric computed from another when drawing (error from accuracy)


METRICS: dict[str, Metric] = {}


def register(metric: Metric) -> Metric:
    if metric.key in METRICS and METRICS[metric.key] != metric:
        raise ValueError(f"metric {metric.key!r} is already registered differently")
    METRICS[metric.key] = metric
    return metric


LOSS = register(Metric("loss", "loss", "mean loss", "loss", "forward"))
LOSS_SE = register(Metric("loss_se", "loss s.e.", "standard error of the mean loss", "loss", "forward"))
ACC = register(Metric("acc", "accuracy", "accuracy (argmax of the output equals the label)", "%", "forward"))
ERR = register(Metric("err", "error", "error (100 - accuracy)", "%", "forward", derived_from="acc"))
# Curvature maps (Li et al. 2018, Sec. 7): the Hessian's extreme eigenvalues at each point, by Lanczos.
EIG_MAX = register(Metric("eig_max", "λmax", "largest eigenvalue of the Hessian of the mean loss", "", "curvature"))
EIG_MIN = register(Metric("eig_min", "λmin", "smallest eigenvalue of the Hessian of the mean loss", "", "curvature"))
EIG_RATIO = register(
    Metric(
        "eig_ratio",
        "|λmin/λmax|",
        "|smallest / largest eigenvalue| of the Hessian (0: locally convex; larger: more non-convex)",
        "",
        "curvature",
    )
)


@dataclass(frozen=True)
class Quantity:
    """A metric on one data set: the dataset ``<data>_<metric>`` of a surface file."""

    data: str
    metric: Metric

    @property
    def name(self) -> str:
        return f"{self.data}_{self.metric.key}"

    @property
    def long_name(self) -> str:
        return f"{self.metric.long_name} on the {DATA_WORDS.get(self.data, self.data)} data"

    def units(self, loss_name: str = "") -> str:
        if self.metric.units != "loss":
            return self.metric.units
        return LOSS_UNITS.get(loss_name, "as returned by the loss")


def parse(name: str, source: str = "quantity") -> Quantity:
    """``train_loss`` -> ``Quantity('train', LOSS)``; a bare metric (``loss``) has no data set."""
    if name in METRICS:
        return Quantity("", METRICS[name])
    for data in DATA_SETS:
        if name.startswith(f"{data}_") and name[len(data) + 1 :] in METRICS:
            return Quantity(data, METRICS[name[len(data) + 1 :]])
    known = ", ".join(f"<{'|'.join(DATA_SETS)}>_{key}" for key in METRICS)
    raise InputError(f"{source} {name!r}: expected {known}")


def derived(name: str) -> tuple[str, callable] | None:
    """For a quantity drawn from another (``test_err`` from ``test_acc``): its source and the map."""
    try:
        q = parse(name)
    except InputError:
        return None
    if q.metric.key == "err":
        return f"{q.data}_acc", lambda acc: 100.0 - acc
    return None


def forward_quantities(data_sets: list[str], classification: bool, stderr: bool = False) -> list[Quantity]:
    """What the evaluation kernel stores for each data set: loss, its standard error, accuracy."""
    metrics = [LOSS, *([LOSS_SE] if stderr else []), *([ACC] if classification else [])]
    return [Quantity(data, metric) for data in data_sets for metric in metrics]


def curvature_quantities() -> list[Quantity]:
    """The curvature maps, on the training data: λmax, λmin and |λmin/λmax|."""
    return [Quantity("train", metric) for metric in (EIG_MAX, EIG_MIN, EIG_RATIO)]
