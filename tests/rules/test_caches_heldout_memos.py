"""Held-out cache shapes, run as a user runs retainlint on a small
project: a project's own memoizing decorator defined in one file and used in another
(RL102, RL101), and a module-level memo keyed by the instance (RL301)."""

import json
import textwrap

from conftest import check_here


def _findings(root, codes: str) -> list[tuple[str, str, int, str]]:
    done = check_here("check", ".", "--no-cache", "--select", codes, "--output-format", "json",
                   "--exit-zero", cwd=root)
    assert done.returncode == 0, done.stderr
    return sorted((f["code"], f["filename"], f["location"]["row"], f.get("severity", ""))
                  for f in json.loads(done.stdout))


def _write(root, files: dict) -> None:
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text))


MEMO = """
    def cached(func):
        cache = {}

        def wrapper(*args):
            if args not in cache:
                cache[args] = func(*args)
            return cache[args]

        return wrapper


    class memoize:
        def __init__(self, func):
            self.func = func
            self.memo = {}

        def __call__(self, *args):
            key = tuple(args)
            if key not in self.memo:
                value = self.func(*args)
                self.memo[key] = value
            return self.memo[key]


    def cached_on_instance(func):
        def wrapper(self):
            if func not in self._cache:
                self._cache[func] = func(self)
            return self._cache[func]

        return wrapper
"""


def test_a_memoizing_decorator_of_another_file_is_a_cache(tmp_path):
    _write(tmp_path, {
        "memo.py": MEMO,
        "cube.py": """
            from memo import cached, cached_on_instance, memoize

            class Cube:
                def __init__(self, data):
                    self.data = data
                    self._cache = {}

                @property
                @cached
                def extrema(self):
                    return min(self.data), max(self.data)

                @cached_on_instance
                def total(self):
                    return sum(self.data)

                @staticmethod
                @memoize
                def fields(cls):
                    return sorted(vars(cls))

                def names(self):
                    return self.fields(self)

                def names_fixed(self):
                    return self.fields(type(self))
        """,
    })
    found = _findings(tmp_path, "RL101,RL102")
    assert [(code, name, row) for code, name, row, _ in found] == [
        ("RL101", "cube.py", 24),  # the instance handed to the class-level memo
        ("RL102", "cube.py", 10),  # `@cached` on a method: `self` is a key
    ]


def test_the_same_decorators_without_a_memo_are_silent(tmp_path):
    _write(tmp_path, {
        "memo.py": """
            import functools

            def traced(func):
                calls = {}

                @functools.wraps(func)
                def wrapper(*args):
                    calls[func.__name__] = calls.get(func.__name__, 0) + 1
                    return func(*args)

                return wrapper

            def by_id(func):
                cache = {}

                def wrapper(*args):
                    key = tuple(id(a) for a in args)
                    if key not in cache:
                        cache[key] = func(*args)
                    return cache[key]

                return wrapper
        """,
        "cube.py": """
            from memo import by_id, traced

            class Cube:
                def __init__(self, data):
                    self.data = data

                @traced
                def total(self):
                    return sum(self.data)

                @by_id
                def first(self):
                    return self.data[0]
        """,
    })
    assert _findings(tmp_path, "RL101,RL102") == []


def test_a_module_memo_keyed_by_the_instance_is_a_warning(tmp_path):
    _write(tmp_path, {
        "layout.py": """
            _boxes = {}
            _registered = {}

            class Cell:
                def __init__(self, points):
                    self.points = points
                    _registered[self] = True

                def bounding_box(self):
                    if self not in _boxes:
                        _boxes[self] = (min(self.points), max(self.points))
                    return _boxes[self]
        """,
    })
    assert _findings(tmp_path, "RL301") == [("RL301", "layout.py", 2, "warning")]


def test_a_per_instance_cache_stored_on_the_instance_is_not_a_cache_decorator(tmp_path):
    _write(tmp_path, {
        "memo.py": """
            import functools
            import weakref

            def memoized_method(*lru_args, **lru_kwargs):
                def decorator(func):
                    @functools.wraps(func)
                    def wrapped(self, *args):
                        self_weak = weakref.ref(self)

                        @functools.lru_cache(*lru_args, **lru_kwargs)
                        def cached(*args):
                            return func(self_weak(), *args)

                        setattr(self, func.__name__, cached)
                        return cached(*args)

                    return wrapped

                return decorator
        """,
        "services.py": """
            from memo import memoized_method

            class Services:
                def __init__(self, loader):
                    self.loader = loader

                @memoized_method()
                def get(self, name):
                    return self.loader.load(name)
        """,
    })
    assert _findings(tmp_path, "RL102") == []


LOADER = """
    import functools
    import numpy as np

    @functools.lru_cache(1)
    def load_vectors(path):
        table = {}
        with open(path) as f:
            for line in f:
                word, *values = line.split()
                table[word] = np.array([float(v) for v in values])
        return table
"""


def test_a_cached_loader_of_an_array_table_is_reported_until_something_clears_it(tmp_path):
    _write(tmp_path, {
        "vectors.py": LOADER,
        "model.py": """
            from vectors import load_vectors

            def build(path):
                return len(load_vectors(path))
        """,
    })
    assert _findings(tmp_path, "RL303") == [("RL303", "vectors.py", 12, "warning")]
    _write(tmp_path, {
        "model.py": """
            from vectors import load_vectors

            def build(path):
                rows = len(load_vectors(path))
                load_vectors.cache_clear()
                return rows
        """,
    })
    assert _findings(tmp_path, "RL303") == []


def test_a_fallback_cache_decorator_under_an_import_guard_is_a_cache(tmp_path):
    """satpy's `_compat.cached_property` is defined under `except ImportError:` (a backport
    for old Pythons) as `property(lru_cache(maxsize=None)(func))`: a definition in a
    module-level `try` is a module function too, and this one caches on `self`."""
    _write(tmp_path, {
        "compat.py": """
            from functools import lru_cache

            try:
                from functools import cached_property_missing as cached_property
            except ImportError:
                def cached_property(func):
                    return property(lru_cache(maxsize=None)(func))
        """,
        "reader.py": """
            from compat import cached_property

            class FileHandler:
                def __init__(self, data):
                    self.data = data

                @cached_property
                def area(self):
                    return sum(self.data)
        """,
    })
    found = _findings(tmp_path, "RL102")
    assert [(code, name, row) for code, name, row, _ in found] == [("RL102", "reader.py", 8)]


def test_an_instance_a_module_level_loader_makes_and_returns_lives_for_the_process(tmp_path):
    """matplotlib's `fontManager = _load_fontmanager()`: the loader reads a cached manager
    or makes one (`fm = FontManager(); json_dump(fm, path); return fm`), once, at import.
    The one instance lives for the process, so a method cache keyed on it keeps nothing
    that would go: `info`, not shown."""
    source = """
        import functools


        class FontManager:
            def __init__(self, size):
                self.size = size
                self.fonts = []

            @functools.lru_cache(1024)
            def _findfont_cached(self, prop):
                return prop


        def _load_fontmanager(path=None):
            if path:
                fm = load(path)
                if fm is not None:
                    return fm
            fm = FontManager(10)
            dump(fm, path)
            return fm
    """
    source = textwrap.dedent(source)
    (tmp_path / "font_manager.py").write_text(source + "\n\nfontManager = _load_fontmanager()\n")
    assert _findings(tmp_path, "RL102") == []

    # made by the same loader per call of a handler, it is not one for the process
    per_call = tmp_path / "per_call"
    per_call.mkdir()
    (per_call / "font_manager.py").write_text(source + "\n\ndef handle_request(path):\n    return _load_fontmanager(path)\n")
    assert [(code, row) for code, _, row, _ in _findings(per_call, "RL102")] == [("RL102", 10)]


def test_an_instance_another_module_s_factory_makes_at_import_lives_for_the_process(tmp_path):
    """accelerate's `logger = get_logger(__name__)` at the top of its modules: `get_logger`
    (in `logging.py`) returns a new `MultiProcessAdapter`, one per importing module, each
    kept for the process, so its method cache keeps nothing that would go."""
    (tmp_path / "pkg").mkdir()
    _write(tmp_path / "pkg", {
        "__init__.py": "",
        "log.py": """
            import functools
            import logging


            class MultiProcessAdapter(logging.LoggerAdapter):
                @functools.lru_cache(None)
                def warning_once(self, *args, **kwargs):
                    self.warning(*args, **kwargs)


            def get_logger(name, log_level=None):
                logger = logging.getLogger(name)
                if log_level is not None:
                    logger.setLevel(log_level)
                return MultiProcessAdapter(logger, {})
        """,
    })
    assert [(code, row) for code, _, row, _ in _findings(tmp_path, "RL102")] == [("RL102", 7)]
    _write(tmp_path / "pkg", {"data.py": """
        from .log import get_logger

        logger = get_logger(__name__)
    """})
    assert _findings(tmp_path, "RL102") == []


def test_a_memoizing_decorator_factory_keeping_a_future_and_a_time_is_a_cache(tmp_path):
    """`@ttl_cache(ttl=15)`: the dict is made by the factory, a level above the decorator,
    annotated, and each entry is (the call's future, when it was made); a TTL checked on read
    evicts nothing, so `self` stays in every key. A dict keyed by a weak reference to the
    instance is silent."""
    _write(tmp_path, {
        "memo.py": """
            import asyncio
            import time
            import weakref
            from typing import Dict


            def ttl_cache(ttl: float = 300):
                _cache: Dict = {}

                def outer(wrapped):
                    async def inner(*args, **kwargs):
                        key = (args, tuple(sorted(kwargs.items())))
                        try:
                            future, made = _cache[key]
                            if time.time() - made > ttl:
                                raise KeyError
                        except KeyError:
                            future = asyncio.ensure_future(wrapped(*args, **kwargs))
                            _cache[key] = (future, time.time())
                        return await future
                    return inner
                return outer


            def weak_ttl_cache(ttl: float = 300):
                def outer(wrapped):
                    caches: Dict = {}

                    async def inner(self, *args):
                        ref = weakref.ref(self, lambda r: caches.pop(r, None))
                        cache = caches.setdefault(ref, {})
                        if args not in cache:
                            cache[args] = asyncio.ensure_future(wrapped(self, *args))
                        return await cache[args]
                    return inner
                return outer
        """,
        "master.py": """
            from memo import ttl_cache, weak_ttl_cache

            class Master:
                def __init__(self, url):
                    self.url = url

                @ttl_cache(ttl=15)
                async def state(self):
                    return self.url

                @weak_ttl_cache(ttl=15)
                async def slaves(self):
                    return [self.url]
        """,
    })
    found = _findings(tmp_path, "RL101,RL102")
    assert [(code, name, row) for code, name, row, _ in found] == [("RL102", "master.py", 8)]
