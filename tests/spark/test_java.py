"""Is there a Java that Spark can start (``streaming.spark.java``)? A missing or too old one is one line saying what
to install, found the way Spark's launcher finds it: ``$JAVA_HOME/bin/java``, else ``java`` on ``PATH``. The Javas
here are stand-ins: a ``release`` file as a JDK ships it, or a script answering ``-version`` as ``java`` does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from streaming.spark.java import INSTALL_HINT, MIN_JAVA, _major, java_problem


@pytest.mark.parametrize("version, major", [("17.0.9", 17), ("21", 21), ("1.8.0_392", 8), ("11.0.2+9", 11),
                                            ("", None), ("1", 1)])
def test_the_major_version_is_read_from_both_numbering_schemes(version, major):
    """Java 9 and later number themselves 9, 10, ...; Java 8 and before called themselves 1.8, 1.7, ..."""
    assert _major(version) == major


def _java_home(root: Path, *, release: str | None = None, answer: str | None = None) -> Path:
    """A Java installation: ``bin/java`` (a script printing ``answer`` to stderr as ``java -version`` does) and
    optionally a ``release`` file."""
    (root / "bin").mkdir(parents=True)
    java = root / "bin" / "java"
    java.write_text(f"#!/bin/sh\necho '{answer or ''}' >&2\n")
    java.chmod(0o755)
    if release is not None:
        (root / "release").write_text(f'IMPLEMENTOR="Test"\nJAVA_VERSION="{release}"\n')
    return root


@pytest.fixture
def no_java(monkeypatch, tmp_path):
    """No JAVA_HOME, and a PATH with nothing but an empty folder."""
    monkeypatch.delenv("JAVA_HOME", raising=False)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    return empty


def test_no_java_anywhere_says_what_to_install(no_java):
    assert java_problem() == (f"Spark needs Java {MIN_JAVA} or newer, and there is no java on PATH (nor a "
                              f"JAVA_HOME): {INSTALL_HINT}")


def test_a_java_home_without_java_is_named(no_java, monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    assert java_problem() == (f"Spark needs Java 17 or newer, and JAVA_HOME ({tmp_path / 'jdk'}) holds no bin/java: "
                              f"{INSTALL_HINT}")


def test_an_old_java_home_is_named_with_its_version(no_java, monkeypatch, tmp_path):
    home = _java_home(tmp_path / "jdk8", release="1.8.0_392")
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert java_problem() == f"Spark needs Java 17 or newer; {home / 'bin' / 'java'} is Java 8: {INSTALL_HINT}"


@pytest.mark.parametrize("release", ["17.0.9", "21.0.1"])
def test_java_17_or_newer_in_java_home_is_fine(no_java, monkeypatch, tmp_path, release):
    monkeypatch.setenv("JAVA_HOME", str(_java_home(tmp_path / "jdk", release=release)))
    assert java_problem() is None


def test_java_home_wins_over_the_java_on_path(no_java, monkeypatch, tmp_path):
    _java_home(tmp_path / "old", answer='java version "1.8.0_392"')
    monkeypatch.setenv("PATH", str(tmp_path / "old" / "bin"))
    monkeypatch.setenv("JAVA_HOME", str(_java_home(tmp_path / "new", release="21")))
    assert java_problem() is None


def test_without_a_release_file_the_java_on_path_is_asked_its_version(no_java, monkeypatch, tmp_path):
    _java_home(tmp_path / "jre", answer='openjdk version "11.0.22" 2024-01-16')
    monkeypatch.setenv("PATH", str(tmp_path / "jre" / "bin") + os.pathsep + str(no_java))
    assert java_problem() == f"Spark needs Java 17 or newer; {tmp_path / 'jre' / 'bin' / 'java'} is Java 11: " \
                             f"{INSTALL_HINT}"


def test_a_java_whose_version_cannot_be_told_is_given_the_benefit_of_the_doubt(no_java, monkeypatch, tmp_path):
    _java_home(tmp_path / "odd", answer="something unexpected")
    monkeypatch.setenv("PATH", str(tmp_path / "odd" / "bin"))
    assert java_problem() is None
