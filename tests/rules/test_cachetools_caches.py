"""cachetools' function decorators (`cachetools.func.lru_cache`, `ttl_cache`...) cache as
functools' do: on a method, `self` is part of every key of one cache kept by the class."""

from conftest import run_rules

INDEX = """\
    from cachetools.func import {decorator}


    class ProductResource:
        def __init__(self, db):
            self._db = db

        @{decorator}()
        def get_unsafe(self, product_id):
            return self._db.get(product_id)
    """


def test_a_cachetools_cache_on_a_method_keeps_its_instances(tmp_path):
    for decorator in ("lru_cache", "ttl_cache"):
        found = [(f.start.line, f.code, f.message)
                 for f in run_rules(tmp_path / decorator, {"index.py": INDEX.format(decorator=decorator)})]
        assert [(line, code) for line, code, _ in found] == [(8, "RL102")], decorator
        assert "(bounded (maxsize=128))" in found[0][2]


def test_a_per_instance_cachetools_cache_is_not_reported(tmp_path):
    source = INDEX.format(decorator="lru_cache").replace("    @lru_cache()\n", "")
    assert [f for f in run_rules(tmp_path, {"index.py": source}) if f.code == "RL102"] == []
