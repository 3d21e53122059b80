"""The dg-nuclear-norm chapter: its parameters and their presets at each scale (Chapter 6)."""

from __future__ import annotations

from companions.scale import Chapter, Float, Int, ListOf, register_chapter


def _check_parameter_pairs(p):
    """Constraints between parameters (a message naming the parameter, or None)."""
    if p["r"] >= p["d"]:
        return f"parameter 'r' = {p['r']} is not allowed: it must be below d = {p['d']}"
    bad = [v for v in p["d_values"] if v <= p["r"]]
    if bad:
        return (
            f"parameter 'd_values' = {list(p['d_values'])} is not allowed: "
            f"every d must exceed r = {p['r']}"
        )
    if p["task_r"] >= p["task_d"]:
        return (
            f"parameter 'task_r' = {p['task_r']} is not allowed: "
            f"it must be below task_d = {p['task_d']}"
        )
    if len(set(p["lambdas"])) != len(p["lambdas"]):
        return f"parameter 'lambdas' = {list(p['lambdas'])} is not allowed: the values must differ"
    if sorted(p["task_nu_sweep"]) != list(p["task_nu_sweep"]):
        return (
            f"parameter 'task_nu_sweep' = {list(p['task_nu_sweep'])} is not allowed: "
            "it must be increasing"
        )
    return None


_GAMMA = Float(0.0, 0.5, low_open=True, high_open=True)

CHAPTER = register_chapter(
    Chapter(
        id="dg-nuclear-norm",
        title="Domain generalization via nuclear-norm regularization",
        notebook="book/domain-generalization/nuclear-norm.md",
        params={
            "r": Int(2, 100_000, doc="number of invariant features |R| (Section 6.4)"),
            "d": Int(3, 1_000_000, doc="number of features d; the environmental ones are d - r"),
            "gamma": Float(
                0.0,
                0.5,
                low_open=True,
                high_open=True,
                doc="ID correlation gamma of the environmental features (OOD: -gamma)",
            ),
            "lambdas": ListOf(
                Float(0.0, 1e6, low_open=True),
                min_len=2,
                doc="regularisation strengths of ERM-l2 and ERM-l1 in the population model",
            ),
            "d_values": ListOf(
                Int(3, 1_000_000), min_len=3, doc="the d sweep at lambda = sweep_lambda"
            ),
            "sweep_lambda": Float(0.0, 1e6, low_open=True, doc="lambda of the d sweep"),
            "domain_counts": ListOf(
                Int(1, 1000),
                min_len=2,
                doc="numbers of training domains E_tr of the domain sweep (Section 6.2.1)",
            ),
            "mc_samples": Int(1000, 100_000_000, doc="Monte Carlo draws of (S_R, S_U) per repeat"),
            "mc_repeats": Int(
                2, 1000, doc="independent Monte Carlo repeats (the 'seeds' of the population model)"
            ),
            "toy_n": Int(10, 10_000_000, doc="training points of the 2-D task (Section 6.3.1)"),
            "toy_test": Int(100, 10_000_000, doc="test points per split of the 2-D task"),
            "toy_steps": Int(1, 1_000_000, doc="full-batch gradient steps on the 2-D task"),
            "toy_lr": Float(0.0, 100.0, low_open=True, doc="step size on the 2-D task"),
            "toy_lambda": Float(
                0.0, 1e6, low_open=True, doc="nuclear-norm weight of ERM-NU on the 2-D task"
            ),
            "toy_seeds": Int(2, 1000, doc="training seeds of the 2-D task"),
            "task_r": Int(1, 100_000, doc="invariant features of the trained multi-domain task"),
            "task_d": Int(2, 1_000_000, doc="features of the trained multi-domain task"),
            "task_gammas": ListOf(
                _GAMMA, min_len=1, doc="environmental correlation of each training domain"
            ),
            "task_n": Int(10, 10_000_000, doc="training points per domain"),
            "task_test": Int(100, 10_000_000, doc="points of the unseen test domain"),
            "task_steps": Int(1, 1_000_000, doc="Adam steps"),
            "task_batch": Int(1, 100_000, doc="batch rows per domain and step (DomainBed: 32)"),
            "task_lr": Float(0.0, 10.0, low_open=True, doc="Adam learning rate"),
            "task_l2": Float(0.0, 1e6, low_open=True, doc="weight of ERM-l2's penalty"),
            "task_nu": Float(
                0.0, 1e6, low_open=True, doc="weight of ERM-NU's penalty (DomainBed default 0.01)"
            ),
            "task_nu_sweep": ListOf(
                Float(0.0, 1e6, low_open=True),
                min_len=2,
                doc="ERM-NU weights of the stable-rank sweep (Figure 6.5 analogue)",
            ),
            "task_seeds": Int(2, 1000, doc="training seeds of the multi-domain task"),
        },
        presets={
            "smoke": dict(
                r=64,
                d=400,
                gamma=0.45,
                lambdas=[0.01, 0.1, 1.0, 3.0],
                d_values=[80, 150, 400],
                sweep_lambda=1.0,
                domain_counts=[1, 3, 8],
                mc_samples=20_000,
                mc_repeats=3,
                toy_n=500,
                toy_test=20_000,
                toy_steps=500,
                toy_lr=0.5,
                toy_lambda=0.1,
                toy_seeds=2,
                task_r=8,
                task_d=64,
                task_gammas=[0.2, 0.3, 0.4],
                task_n=500,
                task_test=5000,
                task_steps=300,
                task_batch=32,
                task_lr=0.05,
                task_l2=0.01,
                task_nu=0.1,
                task_nu_sweep=[0.01, 0.1, 1.0],
                task_seeds=2,
            ),
            "default": dict(
                r=64,
                d=400,
                gamma=0.45,
                lambdas=[0.001, 0.01, 0.1, 1.0, 3.0],
                d_values=[70, 80, 100, 150, 200, 300, 400],
                sweep_lambda=1.0,
                domain_counts=[1, 2, 3, 5, 8],
                mc_samples=100_000,
                mc_repeats=5,
                toy_n=1000,
                toy_test=50_000,
                toy_steps=3000,
                toy_lr=0.5,
                toy_lambda=0.1,
                toy_seeds=3,
                task_r=8,
                task_d=64,
                task_gammas=[0.2, 0.3, 0.4],
                task_n=1000,
                task_test=20_000,
                task_steps=1500,
                task_batch=32,
                task_lr=0.05,
                task_l2=0.01,
                task_nu=0.1,
                task_nu_sweep=[0.01, 0.03, 0.1, 0.3, 1.0, 3.0],
                task_seeds=5,
            ),
            # The source gives no sizes for its theory (infinite data) or its toy: "paper" is a
            # larger run of the same experiments, with DomainBed's batch (32 per domain) and lambda.
            "paper": dict(
                r=256,
                d=4096,
                gamma=0.45,
                lambdas=[0.001, 0.01, 0.1, 1.0, 3.0, 10.0],
                d_values=[300, 400, 600, 800, 1000, 1500, 2000, 4096],
                sweep_lambda=1.0,
                domain_counts=[1, 2, 3, 5, 8, 16],
                mc_samples=1_000_000,
                mc_repeats=10,
                toy_n=10_000,
                toy_test=200_000,
                toy_steps=20_000,
                toy_lr=0.5,
                toy_lambda=0.1,
                toy_seeds=10,
                task_r=64,
                task_d=2048,
                task_gammas=[0.2, 0.3, 0.4],
                task_n=10_000,
                task_test=100_000,
                task_steps=5000,
                task_batch=32,
                task_lr=0.01,
                task_l2=0.01,
                task_nu=0.01,
                task_nu_sweep=[0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0],
                task_seeds=10,
            ),
        },
        checks=(_check_parameter_pairs,),
    )
)
