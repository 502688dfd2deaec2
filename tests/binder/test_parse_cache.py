"""binder/models.py ParseCache: an unchanged object (uid and resourceVersion) is parsed once."""

from __future__ import annotations

from binder.models import ParseCache
from localcluster.objects import make_pod
from resourceapi.api.core_v1 import Pod


def _obj(rv: str, uid: str = "u1") -> dict[str, object]:
    obj = make_pod("p").obj()
    obj["metadata"].update(uid=uid, resourceVersion=rv)
    return obj


def test_an_unchanged_object_is_parsed_once_and_a_changed_one_again() -> None:
    cache: ParseCache[Pod] = ParseCache(Pod)
    first = cache.parse(_obj("1"))
    assert first is not None and cache.parse(_obj("1")) is first
    cache.end_pass()
    assert cache.parse(_obj("1")) is first  # read again in the next pass: kept
    changed = cache.parse(_obj("2"))
    assert changed is not None and changed is not first


def test_what_a_pass_did_not_read_is_dropped_and_objects_without_a_version_are_not_kept() -> None:
    cache: ParseCache[Pod] = ParseCache(Pod)
    first = cache.parse(_obj("1"))
    cache.end_pass()
    cache.end_pass()  # a pass that did not read it
    assert cache.parse(_obj("1")) is not first
    bare = make_pod("p").obj()
    assert cache.parse(bare) is not cache.parse(bare)
