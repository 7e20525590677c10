"""The demo's folder: found where the user's state lives, claimed only when it is the demo's own and no running demo
holds it, cleared of everything but the marker, and refused early when a port the demo serves on is taken."""

from __future__ import annotations

import os
import socket
import pytest

from streaming.commands.demo_dir import (MARKER, DemoDirError, PortInUse, claim_demo_dir, clear_demo_dir,
                                         default_demo_dir, ensure_ports_free, state_demo_dir)


def test_the_folder_is_the_variable_else_the_xdg_state_folder_else_local_state(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.delenv("GROUPSCOPE_DEMO_DIR", raising=False)
    assert default_demo_dir() == tmp_path / "home" / ".local" / "state" / "groupscope" / "demo"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_demo_dir() == state_demo_dir() == tmp_path / "xdg" / "groupscope" / "demo"
    monkeypatch.setenv("GROUPSCOPE_DEMO_DIR", "~/mine")
    assert default_demo_dir() == tmp_path / "home" / "mine", "the variable wins, with ~ expanded"
    assert state_demo_dir() == tmp_path / "xdg" / "groupscope" / "demo", "whatever the variable says"


def test_a_new_folder_is_created_and_marked_with_this_process(tmp_path):
    root = tmp_path / "a" / "demo"
    fd = claim_demo_dir(root)
    try:
        assert (root / MARKER).read_text().endswith(f"\npid {os.getpid()}\n")
    finally:
        os.close(fd)


def test_a_folder_the_demo_did_not_make_is_refused_and_left_alone(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(DemoDirError, match="is not empty and was not made by groupscope demo"):
        claim_demo_dir(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]
    with pytest.raises(DemoDirError, match="is not a folder"):
        claim_demo_dir(tmp_path / "notes.txt")


def test_a_folder_a_running_demo_holds_is_refused_naming_its_pid_until_released(tmp_path):
    held = claim_demo_dir(tmp_path)
    try:
        with pytest.raises(DemoDirError, match=rf"another groupscope demo \(pid {os.getpid()}\) is running"):
            claim_demo_dir(tmp_path)
    finally:
        os.close(held)
    os.close(claim_demo_dir(tmp_path))  # released: the next run may have it


def test_clearing_keeps_only_the_marker_and_keeps_git_out(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the demo's")
    root = tmp_path / "demo"
    fd = claim_demo_dir(root)
    try:
        (root / "checkpoint" / "offsets").mkdir(parents=True)
        (root / "checkpoint" / "offsets" / "0").write_text("v1")
        (root / "job.log").write_text("old run")
        (root / "link").symlink_to(outside, target_is_directory=True)
        clear_demo_dir(root)
        assert sorted(p.name for p in root.iterdir()) == sorted([MARKER, ".gitignore"])
        assert (root / ".gitignore").read_text() == "*\n"
        assert (outside / "keep.txt").read_text() == "not the demo's", "a link is removed, never followed"
        assert (root / MARKER).read_text().endswith(f"pid {os.getpid()}\n")
    finally:
        os.close(fd)


def test_a_taken_port_is_named_with_the_flag_that_changes_it():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(PortInUse, match=rf"^metrics port {port} is already in use .*--metrics-port, 0 for any"):
            ensure_ports_free({"api": 0, "ui": None, "metrics": port})
    ensure_ports_free({"metrics": port})  # free again once closed
