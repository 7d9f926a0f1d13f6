# kbench's Python side (cli/core/pyrt.h): loads a user's implementation
# file, checks what it declares, and calls its supports, prepare, launch and
# release for kbench (cli/core/pyimpl.c). Every exception becomes one line of
# text; nothing here raises into kbench. Tensors reach the user's code
# through DLPack: kbench's device (or host) memory, zero-copy, as objects
# with __dlpack__ and __dlpack_device__ (torch.from_dlpack, np.from_dlpack,
# cupy.from_dlpack), made here with ctypes.
import ctypes
import importlib.util
import os
import sys
import traceback

_impls = []  # the declarations loaded, by index
_runs = {}   # prepared cases: handle -> [impl, case, tensors, state]
_alive = []  # every DLManagedTensor handed out (Tensor.__init__)
_next = [1]


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_DLTENSOR = b"dltensor"
# kbench's dtypes as DLPack's (code: 0 int, 2 float, 4 bfloat; bits)
_DTYPES = {"fp32": (2, 32), "fp16": (2, 16), "bf16": (4, 16), "int32": (0, 32)}


class Tensor:
    """One of the case's tensors, under the op's name (kbench list OP):
    torch.from_dlpack(t) or np.from_dlpack(t) view kbench's memory, no copy.
    Each __dlpack__ call hands out a new capsule of the same memory."""

    __slots__ = ("name", "shape", "strides", "dtype", "data_ptr", "_m", "_keep", "_dev")

    def __init__(self, name, ptr, dtype, shape, strides, device_type, device_id):
        self.name, self.dtype, self.data_ptr = name, dtype, ptr
        self.shape, self.strides = tuple(shape), tuple(strides)
        code, bits = _DTYPES[dtype]
        n = len(shape)
        sh, st = (ctypes.c_int64 * max(n, 1))(*shape), (ctypes.c_int64 * max(n, 1))(*strides)
        m = _DLManagedTensor()
        m.dl_tensor = _DLTensor(ptr, _DLDevice(device_type, device_id), n, _DLDataType(code, bits, 1), sh, st, 0)
        m.manager_ctx, m.deleter = None, None  # kbench owns the memory: nothing to free
        self._m, self._keep, self._dev = m, (sh, st), (device_type, device_id)
        # a consumer (torch, NumPy) keeps the DLManagedTensor's address and
        # reads its deleter when its own array goes, maybe after this object:
        # the struct and its shape stay for the process (a few hundred bytes a case)
        _alive.append((m, sh, st))

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return _capsule_new(ctypes.addressof(self._m), _DLTENSOR, None)

    def __dlpack_device__(self):
        return self._dev

    def __repr__(self):
        return "kbench.Tensor(%s, %s, %s)" % (self.name, list(self.shape), self.dtype)


class Case(dict):
    """The case's parameters under the names kbench list OP shows (ints,
    floats, strings for choices, lists of ints), as keys and attributes."""

    def __getattr__(self, k):
        try:
            return self[k]
        except KeyError:
            raise AttributeError(k) from None


def _line(e, path=None):
    """The exception in one line, at the innermost frame of the user's file."""
    where = ""
    for f in reversed(traceback.extract_tb(e.__traceback__)):
        if path is None or os.path.abspath(f.filename) == os.path.abspath(path):
            where = "%s:%d: " % (f.filename, f.lineno)
            break
    msg = traceback.format_exception_only(type(e), e)[-1].strip()
    return (where + msg).replace("\n", " ").replace("\t", " ")


def _case(text):
    c = Case()
    for ln in text.split("\n"):
        if not ln:
            continue
        name, kind, value = ln.split("\t")
        if kind == "i":
            c[name] = int(value)
        elif kind == "f":
            c[name] = float(value)
        elif kind == "l":
            c[name] = [int(v) for v in value.split(",") if v]
        else:
            c[name] = value
    return c


def _tensors(text):
    t = {}
    for ln in text.split("\n"):
        if not ln:
            continue
        f = ln.split("\t")
        name, ptr, dtype, ndim = f[0], int(f[1]), f[2], int(f[3])
        shape = [int(v) for v in f[4:4 + ndim]]
        strides = [int(v) for v in f[4 + ndim:4 + 2 * ndim]]
        t[name] = Tensor(name, ptr, dtype, shape, strides, int(f[4 + 2 * ndim]), int(f[5 + 2 * ndim]))
    return t


_KEYS = {"op", "name", "help", "supports", "prepare", "launch", "release", "tunables", "inplace", "accumulates",
         "writes", "nondeterministic"}


def _declare(path, i, d):
    """One declaration's line for kbench, or raise ValueError(why)."""
    if not isinstance(d, dict):
        raise ValueError("KBENCH[%d] is not a dict" % i)
    extra = sorted(set(d) - _KEYS)
    if extra:
        raise ValueError("KBENCH[%d]: unknown key '%s' (%s)" % (i, extra[0], ", ".join(sorted(_KEYS))))
    for k in ("op", "name"):
        if not isinstance(d.get(k), str) or not d[k]:
            raise ValueError("KBENCH[%d]: '%s' must be a non-empty string" % (i, k))
    if not callable(d.get("launch")):
        raise ValueError("implementation '%s' (%s) has no launch function" % (d["name"], d["op"]))
    for k in ("supports", "prepare", "release"):
        if d.get(k) is not None and not callable(d[k]):
            raise ValueError("implementation '%s': %s is not a function" % (d["name"], k))
    tun = []
    for tname, spec in (d.get("tunables") or {}).items():
        try:
            values, default = spec
            values = [str(v) for v in values]
        except (TypeError, ValueError):
            raise ValueError("implementation '%s': tunable %s: want (values, default)" % (d["name"], tname)) from None
        tun.append("%s=%s=%s" % (tname, ",".join(values), default))
    for k in ("inplace", "accumulates", "writes", "help"):
        if d.get(k) is not None and not isinstance(d[k], str):
            raise ValueError("implementation '%s': %s must be a string" % (d["name"], k))
    _impls.append(d)
    fields = [len(_impls) - 1, d["op"], d["name"], d.get("help") or "", d.get("inplace") or "",
              d.get("accumulates") or "", int(bool(d.get("nondeterministic"))), ";".join(tun),
              int(d.get("prepare") is not None), int(d.get("supports") is not None), d.get("writes") or ""]
    return "\t".join(str(f).replace("\t", " ").replace("\n", " ") for f in fields)


def load(path):
    """'OK' and a line per implementation, or 'ERR\\t' and why (one line)."""
    try:
        with open(path) as f:
            src = f.read()
    except OSError as e:
        return "ERR\t%s: %s" % (path, e.strerror)
    try:
        compile(src, path, "exec")
    except SyntaxError as e:
        return "ERR\t%s:%s: SyntaxError: %s" % (path, e.lineno, e.msg)
    spec = importlib.util.spec_from_file_location("kbench_user_%d" % len(_impls), path)
    mod = importlib.util.module_from_spec(spec)
    here = os.path.dirname(os.path.abspath(path))
    if here not in sys.path:
        sys.path.insert(0, here)
    try:
        spec.loader.exec_module(mod)
    except BaseException as e:  # SystemExit too: a file must not end kbench
        return "ERR\t%s: importing it: %s" % (path, _line(e, path))
    decl = getattr(mod, "KBENCH", None)
    if not isinstance(decl, (list, tuple)) or not decl:
        return "ERR\t%s: no KBENCH list of implementations (docs/python.md)" % path
    try:
        return "OK\n" + "\n".join(_declare(path, i, d) for i, d in enumerate(decl))
    except ValueError as e:
        return "ERR\t%s: %s" % (path, e)


def supports(i, case):
    """None, or why not (an exception is a reason too: its last line)."""
    f = _impls[i].get("supports")
    if f is None:
        return None
    try:
        r = f(_case(case))
    except Exception as e:
        return "supports() raised: " + _line(e)
    return None if r is None else str(r).replace("\n", " ")


def prepare(i, case, tensors, stream):
    """'OK\\thandle\\tkernel', 'NA\\twhy' (prepare returned NotImplemented
    or raised NotImplementedError) or 'ERR\\twhy'."""
    d = _impls[i]
    c, t = _case(case), _tensors(tensors)
    state, kernel = None, ""
    if d.get("prepare") is not None:
        try:
            state = d["prepare"](c, t, stream)
        except NotImplementedError as e:
            return "NA\t%s" % (str(e) or "prepare() cannot take this case")
        except Exception as e:
            return "ERR\tprepare: " + _line(e)
        if state is NotImplemented:
            return "NA\tprepare() cannot take this case"
        if isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], str):
            state, kernel = state  # (state, what the kernel column says)
    h = _next[0]
    _next[0] += 1
    _runs[h] = [d, c, t, state]
    return "OK\t%d\t%s" % (h, kernel.replace("\t", " ").replace("\n", " "))


def _take(t, got, stream):
    """A launch's returned outputs ({name: tensor} the library allocated)
    copied into kbench's tensors, on kbench's stream: after a verifying
    launch only, so no timed launch pays the copy."""
    for name in got:
        if name not in t:
            raise ValueError("launch returned '%s', which is no tensor of this case (%s)" % (name, ", ".join(t)))
    import torch
    with torch.cuda.stream(torch.cuda.ExternalStream(stream)):
        for name, v in got.items():
            dst = torch.from_dlpack(t[name])
            if v.numel() != dst.numel():
                raise ValueError("launch returned '%s' of %d elements; kbench's has %d" % (name, v.numel(), dst.numel()))
            dst.copy_(v.reshape(dst.shape))


def launch(h, stream, verifying=0):
    """None, or the error (one line). A launch returns None (it wrote
    kbench's outputs) or a dict of the outputs it allocated itself: copied
    into kbench's after a verifying launch, dropped after a timed one."""
    d, c, t, state = _runs[h]
    try:
        if d.get("prepare") is not None:
            got = d["launch"](c, t, stream, state)
        else:
            got = d["launch"](c, t, stream)
        if got is not None and not isinstance(got, dict):
            raise TypeError("launch returned %s: want None, or a dict of outputs {name: tensor}" % type(got).__name__)
        if got and verifying:
            _take(t, got, stream)
    except Exception as e:
        return "launch: " + _line(e)
    return None


def release(h):
    d, c, t, state = _runs.pop(h)
    if d.get("release") is not None:
        try:
            d["release"](c, state)
        except Exception as e:
            return "release: " + _line(e)
    return None
