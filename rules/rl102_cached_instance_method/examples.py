"""RL102's documentation and examples: the `docs` text, and the `valid` and `invalid`
snippets its tests and generated docs are built from."""

from retainlint.analysis.rule import Example

DOCS = """
## What it does
Reports `@functools.lru_cache` / `@functools.cache` (however imported or aliased,
`@lru_cache(maxsize=...)` included, cachetools' `cachetools.func.lru_cache`, `ttl_cache`
and the like, and project decorators that wrap them) applied
directly to an instance method, i.e. a method whose first parameter is `self`. The
method kind comes from the whole decorator list, in any order: `@staticmethod` and
`@classmethod` methods are not reported (whether written above or below the cache),
nor methods of `enum.Enum` subclasses (`IntEnum`, `StrEnum`,
`Flag`, ...), or classes whose only instance is a process-wide singleton: created once at
module level in the same module, or published in a module global by a function of any
module of the project (`global _platform; _platform = Platform()`, also through a class
chosen at run time when the global is typed with the class), when no other function of
the project makes one (test modules aside). A `@property` stacked on the cache is
reported like any other method: the cache is still on the function and keyed by `self`
(`functools.cached_property` is the cure). Same as flake8-bugbear's B019 and pylint's
W1518, without their known false positives.

A project decorator that memoizes by hand counts as a cache too: a function whose inner
wrapper keeps each result in a dict of its closure under the call's arguments
(`cache[args] = func(*args)`, directly or through a local key built from them), or a
class whose `__call__` keeps what the function its `__init__` was given returns in a dict
attribute (`self.memo[key] = self.func(...)`).
On a method, `self` is one of those arguments. A wrapper that keeps the result on the
instance (`self._cache[func] = ...`), keys made of `id()`s, and a key that is not built
from the call's arguments (one slot per function) are not memoizing caches; neither is a
decorator that builds an `lru_cache` per instance on first call and stores it on the
instance (`setattr(self, func.__name__, cached)`, over `weakref.ref(self)`): one cache per
instance, dying with it.

Bounded caches are reported too. The finding is an error when the class is a
`torch.nn.Module` with weights (parameters or buffers) and the cache keeps more than one instance (no `maxsize`, or one above 1): a model loaded,
dropped and loaded again stays with its weights; and when a heavy class's cache has no bound
and is keyed by more than a device or dtype: a new value per distinct key, never dropped. It is a warning when one entry keeps at
most the last instance (`maxsize=1`), or when a light class's cache has no bound; info
(shown with `--min-severity info`) when one entry keeps a part another module of the
project builds in its `__init__` and keeps (a position embedding, a decoder: one part of
the last model that ran, replaced when any model of that class runs again); when the class holds no weights, keeps nothing its
callers hand it (no `self.df = df`, no dataclass fields) and the cache is bounded - it pins
only the few small values it returned - or when the instances are made
once for the whole process (at module level, as a singleton, in an entry point, or by a
factory called there: `logger = get_logger(__name__)`, `fontManager = _load_fontmanager()`), so the
cache keeps them no longer than they live anyway. Weights of a project
subclass count (an abstract base's cached method runs on its subclasses' instances), and
so do children built from a class chosen at run time (`self.lm = lm_cls(config)`). The message
says what stays alive: the instances and the values the method returned for them, and
the class's weights only when it holds some (a rotary-embedding module has none).

## Why it leaks
The cache lives on the function object, i.e. on the class, for the whole process, and
`self` is part of every key: each instance the method was ever called on stays
reachable from the cache (a bounded cache only limits how many). For a model class
that is its weights and everything they reference.

## Incident
A `maxsize=1` cache on a model's method pinned a whole model on the GPU after the engine
that owned it was shut down: the cache entry held `self`.

## Example
```python
import functools
import torch

class Head(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = torch.nn.Linear(dim, dim)

    @functools.lru_cache(maxsize=8)  # RL102 (an error: `Head` holds weights)
    def mask(self, n):
        return torch.ones(n, n).tril()
```

## Fix (suggestion only)
Keep the cache on the instance so it dies with it: `functools.cached_property` for a
method that takes only `self`, otherwise a dict attribute created in `__init__`; or cache
a module-level function keyed on plain values (`_mask(n)`) and call it from the method.
A per-instance `lru_cache` built in `__init__` (`self.f = lru_cache()(self._f)`) is not
a cure: it is a reference cycle back to `self`.
"""

VALID = [
    # a hand-written decorator keeping each result on the instance
    """
def cached(func):
    def wrapper(self, *args):
        if func not in self._cache:
            self._cache[func] = func(self, *args)
        return self._cache[func]

    return wrapper

class Cube:
    def __init__(self):
        self._cache = {}

    @cached
    def extrema(self):
        return 0, 1
""",
    # the cache above the staticmethod: not an instance method
    """
from functools import cache
class Kernels:
    @cache
    @staticmethod
    def compile(n):
        return n
""",
    # classmethod written below or above the cache
    """
import functools
class Registry:
    @classmethod
    @functools.lru_cache(maxsize=None)
    def lookup(cls, name):
        return name
""",
    # enum members are immortal anyway
    """
import enum
from functools import cache
class Color(enum.IntEnum):
    RED = 1
    @cache
    def label(self):
        return self.name.lower()
""",
    # a module-level singleton created once
    """
from functools import lru_cache
class _Platform:
    @lru_cache(maxsize=None)
    def device_name(self, idx):
        return str(idx)
current_platform = _Platform()
""",
    # a process-wide singleton a resolver publishes in a module global
    """
from functools import lru_cache
from typing import Optional

class Platform:
    @lru_cache(maxsize=1)
    def is_cuda(self):
        return True

_current: Optional[Platform] = None

def current_platform() -> Platform:
    global _current
    if _current is None:
        _current = Platform()
    return _current
""",
    # a nested function, not a method
    """
from functools import cache
class Builder:
    def build(self):
        @cache
        def step(n):
            return n
        return step(3)
""",
]

INVALID = [
    Example(
        """
import functools
import torch

class Head(torch.nn.Module):
    @functools.lru_cache(maxsize=1)
    def mask(self, n):
        return torch.ones(n, n).tril()
""",
        lines=[6],
    ),
    Example(
        """
from functools import cache as memo

class Tokenizer:
    @memo
    def vocab(self):
        return {}
""",
        lines=[5],
    ),
    # the staticmethod is on another method; two instances of the "singleton"
    Example(
        """
import functools

class Lookup:
    @functools.lru_cache
    def find(self, key):
        return key

    @staticmethod
    @functools.cache
    def helper(x):
        return x

a = Lookup()
b = Lookup()
""",
        lines=[5],
    ),
    # `@property` over the cache: still one class-level cache keyed by `self`
    Example(
        """
from functools import lru_cache

class DataParser:
    def __init__(self, df):
        self.df = df

    @property
    @lru_cache()
    def field_metas(self):
        return [str(c) for c in self.df.columns]
""",
        lines=[9],
    ),
    # a hand-written memoizing decorator: results kept in its closure, keyed by the args
    Example(
        """
def cached(func):
    cache = {}

    def wrapper(*args):
        if args not in cache:
            cache[args] = func(*args)
        return cache[args]

    return wrapper

class Cube:
    @property
    @cached
    def extrema(self):
        return 0, 1
""",
        lines=[14],
    ),
    # a project decorator that wraps lru_cache
    Example(
        """
import functools

def memoize(fn):
    return functools.lru_cache(maxsize=None)(fn)

class Engine:
    @memoize
    def plan(self, n):
        return n
""",
        lines=[8],
    ),
]
