"""What a profiled op is, read from its name and args (private; used by :mod:`.kineto`).

Kinds (:data:`KINDS`) are decided per op: NCCL kernels by their ``Collective name`` arg (else
their kernel name), GEMMs and attention by common kernel-name fragments of cuBLAS, CUTLASS,
cuDNN, FlashAttention and Triton, memory ops by their Kineto category. Groups
(:data:`GROUPS`) name several kinds at once.
"""

from __future__ import annotations

import re

from ._table import COMMUNICATION, COMPUTE, CPU, MEMORY

KINDS = ("gemm", "attention", "other-compute", "all-reduce", "all-gather", "reduce-scatter",
         "all-to-all", "broadcast", "send-recv", "other-communication", "memcpy", "memset",
         "cpu")
COMM_KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast",
              "send-recv", "other-communication")
GROUPS = {
    "compute": ("gemm", "attention", "other-compute"),
    "communication": COMM_KINDS,
    "memory": ("memcpy", "memset"),
    "gpu": KINDS[:-1],
    "cpu": ("cpu",),
}
KIND_CODE = {k: i for i, k in enumerate(KINDS)}
#: TraceTable category of each kind.
TABLE_CATEGORY = tuple(COMPUTE if k in GROUPS["compute"] else COMMUNICATION if k in COMM_KINDS
                       else MEMORY if k in GROUPS["memory"] else CPU for k in KINDS)

_ATTENTION = re.compile(r"flash|fmha|attention|attn|sdpa|(?:^|[^a-z])mha", re.I)
_GEMM = re.compile(r"gemm|matmul|cutlass|cublas|nvjet|xmma|wgmma|(?:^|[^a-z])b?mm(?:[^a-z]|$)"
                   r"|addmm|s\d+gemm", re.I)
# Collective names as PyTorch's record_param_comms writes them, normalised (lower case, no "_").
_COLLECTIVES = (("allreduce", "all-reduce"), ("reducescatter", "reduce-scatter"),
                ("allgather", "all-gather"), ("alltoall", "all-to-all"),
                ("broadcast", "broadcast"), ("sendrecv", "send-recv"))
_KERNEL_COLLECTIVES = (("allreduce", "all-reduce"), ("reducescatter", "reduce-scatter"),
                       ("allgather", "all-gather"), ("alltoall", "all-to-all"),
                       ("broadcast", "broadcast"), ("sendrecv", "send-recv"),
                       ("send", "send-recv"), ("recv", "send-recv"))


def is_nccl(name: str, args: dict) -> bool:
    """A communication kernel: NCCL/RCCL by name, or carrying PyTorch's collective args."""
    return "nccl" in name.lower() or "Collective name" in args


def comm_kind(name: str, args: dict) -> str:
    """The collective of an NCCL kernel, from ``Collective name`` or else its kernel name."""
    coll = args.get("Collective name")
    if isinstance(coll, str):
        flat = coll.lower().replace("_", "")
        if flat in ("send", "recv"):
            return "send-recv"
        for key, kind in _COLLECTIVES:
            if key in flat:
                return kind
        return "other-communication"
    flat = name.lower().replace("_", "")
    for key, kind in _KERNEL_COLLECTIVES:
        if key in flat:
            return kind
    return "other-communication"


def is_p2p(name: str, args: dict) -> bool:
    """A point-to-point NCCL op (send/recv): not joined across ranks by this reader."""
    coll = args.get("Collective name")
    if isinstance(coll, str):
        return coll.lower() in ("send", "recv")
    return comm_kind(name, args) == "send-recv"


def compute_kind(name: str) -> str:
    """gemm, attention or other-compute, from a kernel's name."""
    if _ATTENTION.search(name):
        return "attention"
    if _GEMM.search(name):
        return "gemm"
    return "other-compute"


def kinds_of(selector) -> tuple:
    """The kinds a category name stands for (a kind, or a group of :data:`GROUPS`)."""
    if selector in GROUPS:
        return GROUPS[selector]
    return (selector,)
