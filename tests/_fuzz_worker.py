"""The capped child process of ``tests/test_fuzz.py``: it calls the public API and says how it went.

Discovery (shared with the test module, which imports this file): every module under
:mod:`uneven` whose dotted name has no part starting with ``_``, every name in its ``__all__``;
classes bring their own public methods. Nothing is listed by hand, so a new public function is
fuzzed the day it is exported.

Protocol. ``python _fuzz_worker.py FD`` is the *zygote*: it applies the memory cap
(``RLIMIT_AS``), imports the library, learns one or more valid calls of every public callable
by running the library's own doctests with recording wrappers, and keeps the objects those calls
returned as a pool of valid instances. Then, for each target the parent opens, it receives one
end of a fresh socket pair over the control socket (``FD``) and forks a child dedicated to that
target; the child answers ``call`` requests one at a time. A crash or a hang of the child (a
segfault, an allocation beyond the cap, a kernel that never returns) costs only that child: the
parent sees EOF or a timeout, reads the signal from the zygote, and opens a new child.

A call request says which base call to start from and which parameters to replace by which
values; values are plain picklable objects, or tagged tuples resolved here (huge zero-copy
arrays, objects from the pool, callables, mutations of the base value).
"""

from __future__ import annotations

import copy
import dataclasses
import doctest
import importlib
import inspect
import io
import math
import os
import pickle
import pkgutil
import re
import socket
import struct
import sys
import time
import warnings
from numbers import Number

# --------------------------------------------------------------------------- discovery (shared)

SKIP_METHOD_PREFIX = "_"


def public_modules():
    """``uneven`` and every submodule whose dotted name has no part starting with ``_``."""
    import uneven

    mods = [uneven]
    for info in pkgutil.walk_packages(uneven.__path__, "uneven."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        mods.append(importlib.import_module(info.name))
    return mods


@dataclasses.dataclass(frozen=True)
class Target:
    """One callable to fuzz: a function, a class (its constructor) or a method of a class."""

    id: str  # "module:qualname"
    kind: str  # "function", "class" or "method"
    params: tuple  # (name, hint) pairs
    doc: str

    @property
    def short(self) -> str:
        return self.id.replace("uneven.", "")


def _hint(param: inspect.Parameter) -> str:
    """A coarse family for a parameter, from its default, annotation and name."""
    default = param.default
    ann = str(param.annotation)
    name = param.name
    if isinstance(default, bool) or "bool" in ann:
        return "bool"
    if isinstance(default, int) or ann in ("int", "<class 'int'>"):
        return "int"
    if isinstance(default, float) or "float" in ann:
        return "float"
    if isinstance(default, str) or ann in ("str", "<class 'str'>"):
        return "str"
    if isinstance(default, (tuple, list)) or "tuple" in ann:
        return "seq"
    if isinstance(default, dict) or "dict" in ann:
        return "dict"
    if callable(default) and default is not inspect.Parameter.empty:
        return "callable"
    if re.match(r"^(n_|num_|k$|p$|m$|v$|seed)", name):
        return "int"
    return "any"


def _params(fn, skip_first=False) -> tuple:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return ()
    out = []
    for i, (name, param) in enumerate(sig.parameters.items()):
        if skip_first and i == 0:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        out.append((name, _hint(param)))
    return tuple(out)


def _own_methods(cls):
    """Public methods defined by ``cls`` itself in the library (not inherited from numpy,
    matplotlib, tuple ...)."""
    for name, member in vars(cls).items():
        if name.startswith(SKIP_METHOD_PREFIX):
            continue
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if inspect.isfunction(member) and member.__module__.startswith("uneven"):
            yield name, member


def discover() -> list[Target]:
    """Every public callable of the library, once each (re-exports are the same object)."""
    seen = {}
    for mod in public_modules():
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name, None)
            if obj is None or inspect.ismodule(obj):
                continue
            if inspect.isclass(obj):
                tid = f"{obj.__module__}:{obj.__qualname__}"
                if tid in seen or not obj.__module__.startswith("uneven"):
                    continue
                if dataclasses.is_dataclass(obj):
                    params = tuple((f.name, "any") for f in dataclasses.fields(obj) if f.init)
                elif hasattr(obj, "_fields"):  # NamedTuple
                    params = tuple((f, "any") for f in obj._fields)
                else:
                    params = _params(obj.__init__, skip_first=True)
                seen[tid] = Target(tid, "class", params, obj.__doc__ or "")
                for mname, member in _own_methods(obj):
                    mid = f"{obj.__module__}:{obj.__qualname__}.{mname}"
                    seen[mid] = Target(mid, "method", _params(member, skip_first=True),
                                       member.__doc__ or "")
            elif callable(obj):
                module = getattr(obj, "__module__", "") or ""
                qual = getattr(obj, "__qualname__", name)
                if not module.startswith("uneven"):
                    continue
                tid = f"{module}:{qual}"
                if tid not in seen:
                    seen[tid] = Target(tid, "function", _params(obj), obj.__doc__ or "")
    return sorted(seen.values(), key=lambda t: t.id)


def resolve(tid: str):
    """The object a target id names (for a method: the class and the method name)."""
    module, qual = tid.split(":")
    obj = importlib.import_module(module)
    parts = qual.split(".")
    for part in parts:
        obj = getattr(obj, part)
    return obj


# --------------------------------------------------------------------------- framing


def send(sock, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(struct.pack("!Q", len(data)) + data)


def recv(sock):
    head = _recv_exact(sock, 8)
    if head is None:
        return None
    (n,) = struct.unpack("!Q", head)
    body = _recv_exact(sock, n)
    return None if body is None else pickle.loads(body)


def _recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


# --------------------------------------------------------------------------- outcomes

#: Outcome categories. ``ok`` and ``clean`` pass; everything else fails the suite.
PASSING = ("ok", "clean")
FAILING = ("unnamed", "other", "nonfinite", "crash", "hang")
#: Outcome counts per target of this session, filled by tests/test_fuzz.py and printed by
#: tests/conftest.py.
STATS: dict = {}
FAILURES: list = []

_BUDGET = re.compile(r"above the (memory|work) limit of .* \(UNEVEN_MAX_(BYTES|STEPS)\)")
_NONFINITE_DOC = re.compile(r"\b(inf|nan|infinite|infinity)\b", re.IGNORECASE)


def _names_a_parameter(message: str, names) -> bool:
    for name in names:
        if re.search(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])", message):
            return True
    return False


class _Walk:
    """Walks a returned value for non-finite or complex numbers (depth- and size-limited)."""

    def __init__(self, np, public_classes, allow_nonfinite=False):
        self.np = np
        self.public = public_classes
        self.allow_nonfinite = allow_nonfinite
        self.problem = None
        self.budget = 2000

    def visit(self, x, path="result", depth=0):
        np = self.np
        if self.problem or depth > 4 or self.budget <= 0:
            return
        self.budget -= 1
        if isinstance(x, (bool, np.bool_, str, bytes)) or x is None:
            return
        if isinstance(x, complex) or isinstance(x, np.complexfloating):
            self.problem = f"{path} is complex ({x!r})"
            return
        if isinstance(x, Number):
            try:
                if not math.isfinite(float(x)) and not self.allow_nonfinite:
                    self.problem = f"{path} is {x!r}"
            except (OverflowError, TypeError, ValueError):
                self.problem = f"{path} is {x!r:.40}"
            return
        if isinstance(x, np.ndarray):
            if x.dtype.kind == "c":
                self.problem = f"{path} is a complex array"
            elif x.dtype.kind == "f" and x.size and not self.allow_nonfinite:
                sample = x if x.size <= 10**7 else x.reshape(-1)[:10**6]  # a view may be huge
                if not np.isfinite(sample).all():
                    self.problem = f"{path} holds non-finite entries"
            return
        if isinstance(x, dict):
            for k, v in list(x.items())[:50]:
                self.visit(v, f"{path}[{k!r}]", depth + 1)
            return
        if isinstance(x, (list, tuple)):
            for i, v in enumerate(x[:50]):
                self.visit(v, f"{path}[{i}]", depth + 1)
            return
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            for f in dataclasses.fields(x):
                self.visit(getattr(x, f.name, None), f"{path}.{f.name}", depth + 1)
            self.properties(x, path, depth)
            return
        if type(x) in self.public:
            self.properties(x, path, depth)

    def properties(self, x, path, depth):
        for name, member in vars(type(x)).items():
            if name.startswith("_") or not isinstance(member, property):
                continue
            try:
                value = getattr(x, name)
            except Exception as err:  # a property of a returned object must not raise
                self.problem = f"{path}.{name} raised {type(err).__name__}: {err}"[:300]
                return
            if _NONFINITE_DOC.search(member.__doc__ or ""):
                continue
            self.visit(value, f"{path}.{name}", depth + 1)


# --------------------------------------------------------------------------- the zygote


class Catalog:
    """Targets, their recorded valid calls, and a pool of valid instances of public classes."""

    def __init__(self):
        import numpy as np

        self.np = np
        self.targets = {t.id: t for t in discover()}
        self.objects = {tid: resolve(tid) for tid in self.targets}
        self.classes = {tid: obj for tid, obj in self.objects.items() if inspect.isclass(obj)}
        self.public_classes = set(self.classes.values())
        self.calls = {tid: [] for tid in self.targets}
        self.pool: dict[type, list] = {cls: [] for cls in self.public_classes}
        self._record()
        self._pool_constructor_calls()

    # ---- learning valid calls from the doctests
    def _record(self):
        import uneven  # noqa: F401

        # The doctests are found before any function is wrapped: the finder keeps a function's
        # doctest only when the function's globals are its module's, which a wrapper's are not.
        finder = doctest.DocTestFinder(exclude_empty=True)
        tests = []
        for mod in public_modules():
            try:
                tests.extend(finder.find(mod))
            except Exception:
                continue
        originals = []
        by_object = {}
        for tid, t in self.targets.items():
            obj = self.objects[tid]
            if t.kind == "function":
                by_object[id(obj)] = (tid, obj)
        wrappers = {}
        for key, (tid, obj) in by_object.items():
            wrappers[key] = self._wrap(tid, obj, method=False)
        for mod in list(sys.modules.values()):
            name = getattr(mod, "__name__", "") or ""
            if not name.startswith("uneven"):
                continue
            for attr, value in list(vars(mod).items()):
                w = wrappers.get(id(value))
                if w is not None and value is by_object[id(value)][1]:
                    originals.append((mod, attr, value))
                    setattr(mod, attr, w)
        for tid, t in self.targets.items():
            if t.kind != "method":
                continue
            cls_id, mname = tid.rsplit(".", 1)
            cls = self.classes.get(cls_id)
            raw = vars(cls).get(mname) if cls else None
            if cls is None or not inspect.isfunction(raw):
                continue
            originals.append((cls, mname, raw))
            setattr(cls, mname, self._wrap(tid, raw, method=True))
        try:
            runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS, verbose=False)
            for test in tests:
                # The globals were copied before the patching: the wrapped functions go in here.
                for attr, value in list(test.globs.items()):
                    w = wrappers.get(id(value))
                    if w is not None and value is by_object[id(value)][1]:
                        test.globs[attr] = w
                out = io.StringIO()
                try:
                    runner.run(test, out=out.write, clear_globs=True)
                except Exception:
                    pass
        finally:
            for owner, attr, value in reversed(originals):
                setattr(owner, attr, value)

    def _wrap(self, tid, fn, method):
        catalog = self

        def wrapper(*args, **kwargs):
            result = fn(*args, **kwargs)
            calls = catalog.calls[tid]
            if len(calls) < 6:
                try:
                    rec = copy.deepcopy((args, kwargs))
                    if len(pickle.dumps(rec[0][1:] if method else rec[0])) < 2_000_000:
                        calls.append(rec)
                except Exception:
                    pass
            catalog._collect(result)
            return result

        wrapper.__wrapped__ = fn
        wrapper.__name__ = getattr(fn, "__name__", "wrapper")
        wrapper.__doc__ = fn.__doc__
        try:
            wrapper.__signature__ = inspect.signature(fn)
        except (TypeError, ValueError):
            pass
        return wrapper

    def _collect(self, value, depth=0):
        if depth > 2:
            return
        cls = type(value)
        if cls in self.pool:
            if len(self.pool[cls]) < 6:
                self.pool[cls].append(value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                self._collect(getattr(value, f.name, None), depth + 1)
        elif isinstance(value, (list, tuple)):
            for v in value[:10]:
                self._collect(v, depth + 1)
        elif isinstance(value, dict):
            for v in list(value.values())[:10]:
                self._collect(v, depth + 1)

    def _pool_constructor_calls(self):
        """A valid instance is also a valid constructor call (its fields)."""
        for tid, cls in self.classes.items():
            for inst in self.pool.get(cls, []):
                if dataclasses.is_dataclass(cls):
                    kw = {f.name: getattr(inst, f.name) for f in dataclasses.fields(cls) if f.init}
                elif hasattr(cls, "_fields"):
                    kw = dict(zip(cls._fields, inst, strict=True))
                else:
                    continue
                if len(self.calls[tid]) < 6:
                    self.calls[tid].append(((), kw))

    def describe(self):
        return {
            "targets": len(self.targets),
            "with_calls": sorted(tid for tid, c in self.calls.items() if c),
            "pool": {cls.__name__: len(v) for cls, v in self.pool.items()},
        }

    # ---- building one call
    def instance(self, cls_id, k=0):
        cls = self.classes[cls_id]
        items = self.pool.get(cls) or []
        return items[k % len(items)] if items else None

    def fresh(self, value, depth=0):
        """A copy of a recorded argument that a call may change freely, made cheaply: arrays
        and containers are copied, matplotlib axes and figures are replaced by new ones, frozen
        library objects (read-only arrays) are shared."""
        np = self.np
        from matplotlib.axes import Axes
        from matplotlib.figure import Figure

        if depth > 4:
            return value
        if isinstance(value, np.ndarray):
            return value.copy() if value.size <= 10**7 else value
        if isinstance(value, Axes):
            return Figure().add_subplot()
        if isinstance(value, Figure):
            from uneven import plots

            return plots.NotebookFigure(figsize=tuple(value.get_size_inches()))
        if isinstance(value, list):
            return [self.fresh(v, depth + 1) for v in value]
        if isinstance(value, dict):
            return {k: self.fresh(v, depth + 1) for k, v in value.items()}
        if type(value) is tuple:
            return tuple(self.fresh(v, depth + 1) for v in value)
        return value

    def resolve_value(self, value, base):
        np = self.np
        if not (isinstance(value, tuple) and value and isinstance(value[0], str)
                and value[0].startswith("@")):
            return copy.deepcopy(value)
        tag, *rest = value
        if tag == "@huge":  # a zero-copy view of any size
            shape, fill = rest
            return np.broadcast_to(np.float64(fill), tuple(shape))
        if tag == "@pool":
            (name, k) = rest
            for cls, items in self.pool.items():
                if cls.__name__ == name and items:
                    return items[k % len(items)]
            return None
        if tag == "@callable":
            (what,) = rest
            if what == "none":
                return lambda *a, **k: None
            if what == "raise":
                def boom(*a, **k):
                    raise RuntimeError("a callable passed by the fuzzer")
                return boom
            return len
        if tag == "@object":
            return object()
        if tag == "@mutate":
            (how,) = rest
            return self.mutate(base, how)
        return copy.deepcopy(value)

    def mutate(self, base, how):
        """A near-valid value: the base value scaled, negated, cut, grown, retyped ..."""
        np = self.np
        if base is inspect.Parameter.empty:
            return None
        try:
            if isinstance(base, (bool, np.bool_)):
                return {"neg": not base}.get(how, int(base))
            if isinstance(base, Number):
                return {
                    "neg": -base, "zero": 0 * base, "big": base * 10**6, "huge": base * 10**12,
                    "tiny": base * 1e-300, "plus1": base + 1, "minus1": base - 1,
                    "float": float(base) + 0.5, "str": str(base), "list": [base],
                    "nan": math.nan, "array": np.asarray(base),
                }.get(how, base)
            if isinstance(base, (list, tuple, np.ndarray)):
                arr = np.asarray(base)
                if how == "neg" and arr.dtype.kind in "iuf":
                    return -arr
                if how == "big" and arr.dtype.kind in "iuf":
                    return arr * 10**6
                if how == "huge" and arr.dtype.kind in "iuf":
                    return arr.astype(float) * 1e300
                if how == "drop" and len(base):
                    return base[:-1]
                if how == "dup" and len(base):
                    return np.concatenate([arr, arr]) if arr.ndim else arr
                if how == "nan" and arr.dtype.kind == "f" and arr.size:
                    out = arr.astype(float).copy()
                    out.flat[0] = math.nan
                    return out
                if how == "T" and arr.ndim == 2:
                    return arr.T
                if how == "flat":
                    return arr.ravel()
                if how == "2d":
                    return arr.reshape(1, -1) if arr.ndim == 1 else arr[None]
                if how == "int32" and arr.dtype.kind in "iuf":
                    return arr.astype(np.int32)
                if how == "float32" and arr.dtype.kind in "iuf":
                    return arr.astype(np.float32)
                if how == "list":
                    return arr.tolist()
                if how == "zero" and arr.dtype.kind in "iuf":
                    return np.zeros_like(arr)
                return base
            if isinstance(base, str):
                return {"neg": base.upper(), "zero": "", "big": base * 1000, "str": base + "x"}.get(
                    how, base)
            if isinstance(base, dict):
                if how == "zero":
                    return {}
                return {k: self.mutate(v, how) for k, v in base.items()}
        except Exception:
            return base
        return base

    def plausible(self, name, hint):
        """A value for a required parameter no recorded call supplies."""
        import matplotlib

        matplotlib.use("Agg")
        if name in ("ax",):
            from uneven import plots

            return plots.figure()[1]
        if name in ("fig",):
            from uneven import plots

            return plots.figure()[0]
        for cls, items in self.pool.items():
            low = cls.__name__.lower()
            if items and (name == low or name in low or low.startswith(name)):
                return items[0]
        return {"int": 2, "float": 1.0, "bool": False, "str": "x", "seq": (1, 2)}.get(hint, None)

    def build(self, tid, base_index, changes):
        t = self.targets[tid]
        obj = self.objects[tid]
        calls = self.calls[tid]
        this = None
        if t.kind == "method":
            cls_id, mname = tid.rsplit(".", 1)
            if calls:
                (args, kwargs) = calls[base_index % len(calls)]
                args, kwargs = self.fresh((args, kwargs))
                this, args = args[0], args[1:]
            else:
                this = self.instance(cls_id, base_index)
                args, kwargs = (), {}
            if this is None:
                return None
            fn = getattr(this, mname)
        else:
            fn = obj
            if calls:
                args, kwargs = self.fresh(calls[base_index % len(calls)])
            else:
                args, kwargs = (), {}
        try:
            sig = inspect.signature(fn)
            bound = sig.bind_partial(*args, **kwargs)
        except (TypeError, ValueError):
            return fn, args, kwargs
        arguments = dict(bound.arguments)
        params = sig.parameters
        # Required parameters that no recorded call supplies get a plausible value.
        for name, p in params.items():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or name in arguments:
                continue
            if p.default is inspect.Parameter.empty:
                hint = dict(t.params).get(name, "any")
                arguments[name] = self.plausible(name, hint)
        extra = {}
        for name, value in changes.items():
            if name == "**extra":
                extra.update(value)
                continue
            base = arguments.get(name, params[name].default if name in params else None)
            arguments[name] = self.resolve_value(value, base)
        pos, kw = [], {}
        for name, p in params.items():
            if name not in arguments:
                continue
            if p.kind == p.VAR_POSITIONAL:
                pos.extend(arguments[name])
            elif p.kind == p.VAR_KEYWORD:
                kw.update(arguments[name])
            elif p.kind == p.POSITIONAL_ONLY:
                pos.append(arguments[name])
            else:
                kw[name] = arguments[name]
        kw.update(extra)
        return fn, tuple(pos), kw


def run_call(catalog, tid, base_index, changes):
    """Make one call; return (category, detail)."""
    np = catalog.np
    t = catalog.targets[tid]
    built = catalog.build(tid, base_index, changes)
    if built is None:
        return "skip", "no instance to call the method on"
    fn, args, kwargs = built
    names = [n for n, _ in t.params] + [k for k in changes if k != "**extra"]
    names += list(changes.get("**extra", {}))
    try:
        with warnings.catch_warnings():
            # numpy reports overflow, 0/0 and dropped imaginary parts as warnings: findings.
            warnings.simplefilter("error", RuntimeWarning)
            warnings.simplefilter("error", getattr(np, "exceptions", np).ComplexWarning)
            result = fn(*args, **kwargs)
    except (ValueError, TypeError) as err:
        msg = str(err)
        # A budget refusal names the knob that allows more (UNEVEN_MAX_BYTES/_STEPS) and the
        # parameter inside the library that made the call big: it is a clean, explained refusal
        # even when that parameter is not one of this callable's own.
        if _names_a_parameter(msg, names) or _BUDGET.search(msg):
            return "clean", f"{type(err).__name__}: {msg}"[:300]
        return "unnamed", f"{type(err).__name__}: {msg}"[:300]
    except BaseException as err:  # noqa: BLE001 - every other exception is a finding
        if isinstance(err, (KeyboardInterrupt, SystemExit)):
            raise
        return "other", f"{type(err).__module__}.{type(err).__name__}: {err}"[:300]
    # A docstring that says inf or nan can come back allows them (never complex numbers).
    walk = _Walk(np, catalog.public_classes, allow_nonfinite=bool(_NONFINITE_DOC.search(t.doc)))
    walk.visit(result)
    if walk.problem:
        return "nonfinite", walk.problem
    return "ok", type(result).__name__


def serve_child(catalog, sock):
    """One forked child: answer call requests for one target until the parent closes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    send(sock, ("pid", os.getpid()))
    while True:
        req = recv(sock)
        if req is None:
            return
        if req[0] == "env":  # the library's budgets for the calls of this child
            os.environ["UNEVEN_MAX_BYTES"] = req[1]
            os.environ["UNEVEN_MAX_STEPS"] = req[2]
            continue
        _, tid, base_index, changes = req
        t0 = time.perf_counter()
        try:
            category, detail = run_call(catalog, tid, base_index, changes)
        except BaseException as err:  # noqa: BLE001 - building the call itself failed
            category, detail = "other", f"fuzz harness: {type(err).__name__}: {err}"[:300]
        plt.close("all")
        send(sock, (category, detail, time.perf_counter() - t0))


def zygote(fd: int) -> None:
    import resource

    cap = int(os.environ.get("UNEVEN_FUZZ_MEM", str(3 * 2**30)))
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    ctrl = socket.socket(fileno=fd)
    # Library output (explorers display(), prints) must not reach the terminal.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401 - imported once here, not in every forked child

    catalog = Catalog()
    ctrl.send(pickle.dumps(("ready", catalog.describe())))
    reaped = {}

    def reap():
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            reaped[pid] = status

    while True:
        msg, fds, _, _ = socket.recv_fds(ctrl, 1 << 16, 1)
        if not msg:
            return
        reap()
        req = pickle.loads(msg)
        if req[0] == "open":
            child_sock = socket.socket(fileno=fds[0])
            pid = os.fork()
            if pid == 0:
                ctrl.close()
                try:
                    serve_child(catalog, child_sock)
                finally:
                    os._exit(0)
            child_sock.close()
            ctrl.send(pickle.dumps(("opened", pid)))
        elif req[0] == "status":
            pid = req[1]
            status = reaped.pop(pid, None)
            if status is None:
                try:
                    _, status = os.waitpid(pid, 0)
                except ChildProcessError:
                    status = 0
            sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
            ctrl.send(pickle.dumps(("status", sig, code)))
        elif req[0] == "quit":
            return


if __name__ == "__main__":
    zygote(int(sys.argv[1]))
