"""The Python API (docs/python-api.md): ``repro.study``, ``repro.verify`` and
``repro.open_verified`` take a str or a path and return the typed objects the commands use;
bad input is :class:`BadInput` with nothing written; ``repro.verify`` is both the callable and
the verifier's subpackage, whatever was imported first; ``import repro`` imports nothing else;
and the doc's example runs as written."""

from __future__ import annotations

import copy
import inspect
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import repro
from conftest import ROOT, SMALL, bundle_digests, run_study
from repro._bundle.signatures import sign_bundle
from repro._execute.studies import StudyResult
from repro.errors import EXIT_CODES, EXIT_SLOTS_LOST, BadInput, NotVerified, SlotsLost
from repro.verify import Verification, VerifiedBundle
from test_losses import BROKEN
from test_signatures import openssh_key

#: Four slots of CartPole: the smallest real study.
TINY: dict[str, Any] = {
    **copy.deepcopy(SMALL),
    "id": "api-tiny",
    "matrix": [{"name": "env_id", "levels": ["CartPole-v1"]}],
    "runs_per_condition": 2,
}

SHIPPED = ROOT / "docs" / "examples" / "quick-start-bundle"


def _python(code: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -c CODE`` in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=cwd
    )


@pytest.fixture(scope="module")
def tiny_protocol(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tiny") / "protocol.json"
    path.write_text(json.dumps(TINY), "utf-8")
    return path


@pytest.fixture(scope="module")
def api_study(tiny_protocol: Path, tmp_path_factory: pytest.TempPathFactory) -> StudyResult:
    """:data:`TINY` run by ``repro.study`` with both paths given as str."""
    out = tmp_path_factory.mktemp("api") / "bundle"
    return repro.study(str(tiny_protocol), str(out))


@pytest.mark.slow
class TestImport:
    """``import repro`` is cheap, its public face is ``__all__``, and ``repro.verify`` is the
    function and the subpackage at once."""

    def test_import_repro_imports_nothing_else(self) -> None:
        """A fresh ``import repro`` loads no other module of repro, nor attrs; asking for
        ``repro.study`` and ``repro.open_verified`` loads only the private module that holds
        them (and repro.errors, and repro._files, which imports only the standard library), not
        the study machinery nor the verifier."""
        done = _python(
            "import sys, repro\n"
            "print(sorted(m for m in sys.modules if m.startswith(('repro', 'attrs'))))\n"
            "repro.study, repro.open_verified\n"
            "print(sorted(m for m in sys.modules if m.startswith(('repro', 'attrs'))))\n"
        )
        assert done.returncode == 0, done.stderr
        first, second = done.stdout.splitlines()
        assert first == "['repro']"
        assert second == "['repro', 'repro._api', 'repro._files', 'repro.errors']"

    def test_the_public_face_is_all(self) -> None:
        """``__all__`` names exactly the API; every other name a fresh ``import repro`` binds
        is private (a leading underscore), and ``dir(repro)`` lists the API; ``from repro
        import *`` binds each public name. (Subpackages, bound here once imported, keep their
        names.)"""
        assert sorted(repro.__all__) == sorted(
            ["DISTRIBUTION", "__version__", "open_verified", "study", "verify", "version"]
        )
        done = _python(
            "import repro\n"
            "print(sorted(n for n in vars(repro) if not n.startswith('_')))\n"
            "print(sorted(n for n in dir(repro) if not n.startswith('_')))\n"
            "ns = {}\n"
            "exec('from repro import *', ns)\n"
            "print(sorted(n for n in ns if n != '__builtins__'))\n"
        )
        assert done.returncode == 0, done.stderr
        bound, listed, starred = done.stdout.splitlines()
        assert bound == "['DISTRIBUTION', 'version']"
        assert listed == str(sorted(n for n in repro.__all__ if not n.startswith("_")))
        assert starred == str(sorted(repro.__all__))

    def test_an_unknown_name_is_an_attribute_error(self) -> None:
        """A name the package does not have is an AttributeError, as for any module."""
        with pytest.raises(AttributeError, match="no_such_name"):
            repro.no_such_name  # type: ignore[attr-defined]  # noqa: B018

    def test_the_issue_s_acceptance(self) -> None:
        """``python -c "import repro; repro.verify('DIR')"`` runs, and verifies."""
        done = _python(f"import repro; repro.verify({str(SHIPPED)!r})")
        assert done.returncode == 0, done.stderr
        done = _python(f"import repro; print(repro.verify({str(SHIPPED)!r}).ok)")
        assert done.stdout.split() == ["True"], done.stderr

    @pytest.mark.parametrize(
        "first",
        [
            "import repro",
            "import repro.verify",
            "import repro.verify._core",
            "from repro.verify import verify as v",
            "from repro.verify._walk import scan_tree",
            "import repro._cli.app",
            "from repro import verify as v",
        ],
    )
    def test_repro_verify_is_the_function_and_the_package(self, first: str) -> None:
        """Whatever was imported first, ``repro.verify(DIR)`` verifies (a Verification),
        ``repro.verify`` is the subpackage :mod:`repro.verify` (its names there, its
        submodules importable after), and ``from repro.verify import verify`` is still the
        verifier's own function (a list of findings)."""
        code = (
            f"{first}\n"
            "import sys, repro\n"
            f"done = repro.verify({str(SHIPPED)!r})\n"
            "assert type(done).__name__ == 'Verification' and done.ok, done\n"
            "assert repro.verify is sys.modules['repro.verify']\n"
            "import repro.verify._integrity\n"
            "assert repro.verify._integrity is sys.modules['repro.verify._integrity']\n"
            "from repro.verify import Finding, verify\n"
            f"assert verify({str(SHIPPED)!r}) == []\n"
            "from repro import verify as called\n"
            f"assert called({str(SHIPPED)!r}).ok\n"
            "print('fine')\n"
        )
        done = _python(code)
        assert done.stdout.split() == ["fine"], done.stderr

    def test_the_callable_s_signature_is_the_api_s(self) -> None:
        """``inspect.signature(repro.verify)`` (what ``help`` and an editor show) is the API
        function's, and each function is keyword-only past its paths."""
        from repro import _api

        assert inspect.signature(repro.verify) == inspect.signature(_api.verify)
        for function, paths in ((_api.verify, 1), (_api.study, 2), (_api.open_verified, 1)):
            kinds = [p.kind for p in inspect.signature(function).parameters.values()]
            assert kinds[:paths] == [inspect.Parameter.POSITIONAL_OR_KEYWORD] * paths
            assert set(kinds[paths:]) == {inspect.Parameter.KEYWORD_ONLY}

    def test_slots_lost_has_the_strict_exit_code(self) -> None:
        """SlotsLost maps to the exit code of ``repro study --strict``."""
        assert EXIT_CODES[SlotsLost] == EXIT_SLOTS_LOST


@pytest.mark.slow
class TestStudy:
    """``repro.study`` runs what ``repro study`` runs, and refuses bad input before writing."""

    def test_a_study_from_str_paths(self, api_study: StudyResult) -> None:
        """Given str paths, it returns the StudyResult of a bundle that verifies, its root a
        Path."""
        assert isinstance(api_study, StudyResult)
        assert isinstance(api_study.root, Path)
        assert api_study.derived.aggregates.estimand.value is not None
        assert repro.verify(api_study.root).ok

    def test_the_same_bundle_as_the_study_machinery(
        self, api_study: StudyResult, tiny_protocol: Path, tmp_path: Path
    ) -> None:
        """Given Paths, it writes the same bytes as the study machinery run directly, and the
        same as given str (but what records when it ran)."""
        again = repro.study(tiny_protocol, tmp_path / "again")
        direct = run_study(tiny_protocol, tmp_path / "direct")
        assert bundle_digests(again.root) == bundle_digests(direct)
        assert bundle_digests(api_study.root) == bundle_digests(direct)

    def test_a_bad_protocol_is_bad_input_and_writes_nothing(self, tmp_path: Path) -> None:
        """A protocol that breaks a rule raises BadInput naming the JSON path; the root is not
        created and its parent holds nothing new."""
        bad = {**copy.deepcopy(TINY), "runs_per_condition": 0}
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(bad), "utf-8")
        before = sorted(tmp_path.iterdir())
        with pytest.raises(BadInput, match=re.escape("$.runs_per_condition")):
            repro.study(path, tmp_path / "out")
        assert sorted(tmp_path.iterdir()) == before

    def test_an_existing_root_is_bad_input(self, tiny_protocol: Path, tmp_path: Path) -> None:
        """An ``out`` that exists raises BadInput, and what it holds is untouched."""
        (tmp_path / "out").mkdir()
        with pytest.raises(BadInput):
            repro.study(tiny_protocol, tmp_path / "out")
        assert list((tmp_path / "out").iterdir()) == []

    @pytest.mark.parametrize(
        ("options", "where"),
        [
            ({"workers": 1, "scheduler": "tcp://127.0.0.1:1"}, "exclude each other"),
            ({"workers": 0}, "workers"),
            ({"options": {"unknown": "1"}}, "unknown"),
            ({"options": {"k": 1}}, "options"),
        ],
    )
    def test_bad_options_are_bad_input(
        self, tiny_protocol: Path, tmp_path: Path, options: dict[str, Any], where: str
    ) -> None:
        """Workers with a scheduler, a worker count out of range, an option the adapter does not
        take or that is not a string: BadInput, nothing written."""
        with pytest.raises(BadInput, match=re.escape(where)):
            repro.study(tiny_protocol, tmp_path / "out", **options)
        assert not (tmp_path / "out").exists()

    def test_a_path_that_is_no_path_is_a_type_error(self, tmp_path: Path) -> None:
        """bytes, or no path at all, is a TypeError naming the argument."""
        with pytest.raises(TypeError, match="protocol"):
            repro.study(b"protocol.json", tmp_path / "out")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="out"):
            repro.study(tmp_path / "p.json", 3)  # type: ignore[arg-type]

    def test_strict_raises_slots_lost_with_the_bundle_whole(self, tmp_path: Path) -> None:
        """``strict=True`` on a study whose policy fails: SlotsLost with the slots lost and the
        result, and the bundle verifies; without it, the same study returns."""
        broken = {**copy.deepcopy(BROKEN), "runs_per_condition": 2}
        path = tmp_path / "broken.json"
        path.write_text(json.dumps(broken), "utf-8")
        with pytest.raises(SlotsLost) as raised:
            repro.study(path, tmp_path / "strict", strict=True)
        assert raised.value.lost == 2
        assert raised.value.result.root == tmp_path / "strict"
        assert repro.verify(tmp_path / "strict").ok
        result = repro.study(path, tmp_path / "lenient")
        assert [loss.outcome for loss in result.derived.ledger.losses] == ["failed", "failed"]
        assert result.lost == 2


class TestVerify:
    """``repro.verify`` returns findings by code; ``repro.open_verified`` the parsed bundle or
    NotVerified."""

    @pytest.mark.slow
    @pytest.mark.parametrize("kind", [str, Path])
    def test_a_bundle_that_verifies(self, api_study: StudyResult, kind: type) -> None:
        """str or Path: a Verification with no finding and the bundle's sha256."""
        done = repro.verify(kind(api_study.root))
        assert isinstance(done, Verification)
        assert done.ok and done.findings == []
        assert done.bundle_sha256 is not None and len(done.bundle_sha256) == 64

    @pytest.mark.parametrize("kind", [str, Path])
    def test_open_verified(self, api_study: StudyResult, kind: type) -> None:
        """str or Path: the VerifiedBundle of the study, its figures those the study derived."""
        bundle = repro.open_verified(kind(api_study.root))
        assert isinstance(bundle, VerifiedBundle)
        assert bundle.root == api_study.root
        assert bundle.protocol.protocol.id == TINY["id"]
        assert bundle.aggregates == api_study.derived.aggregates
        assert len(list(bundle.all_records())) >= 4

    def test_the_verifier_s_own_functions_take_a_str(self, api_study: StudyResult) -> None:
        """``repro.verify.verify`` and ``repro.verify.open_verified`` (which raised TypeError on
        a str) take one."""
        import repro.verify as package

        assert package.verify(str(api_study.root)) == []
        assert package.open_verified(str(api_study.root)).root == api_study.root

    def test_a_tampered_bundle_is_a_result_with_findings(
        self, api_study: StudyResult, tmp_path: Path
    ) -> None:
        """One flipped payload byte: verify returns (does not raise) a Verification that is not
        ok, naming the file by the code digest-mismatch; open_verified raises NotVerified with
        the same findings."""
        root = tmp_path / "bundle"
        shutil.copytree(api_study.root, root)
        target = root / "data" / "aggregates.json"
        data = bytearray(target.read_bytes())
        data[len(data) // 2] ^= 0x01
        target.write_bytes(bytes(data))
        done = repro.verify(root)
        assert not done.ok and done.bundle_sha256 is None
        assert ("digest-mismatch", "data/aggregates.json") in {
            (f.code, f.file) for f in done.findings
        }
        with pytest.raises(NotVerified) as raised:
            repro.open_verified(str(root))
        assert [f.code for f in raised.value.findings] == [f.code for f in done.findings]

    def test_not_a_bundle_is_bad_input(self, tmp_path: Path) -> None:
        """A missing path, or a directory that holds no bundle: BadInput from both."""
        for path in (tmp_path / "missing", tmp_path):
            with pytest.raises(BadInput):
                repro.verify(path)
            with pytest.raises(BadInput):
                repro.open_verified(path)

    def test_trusted_keys(self, api_study: StudyResult, tmp_path: Path) -> None:
        """A signed bundle: with the signer's key (a str), its signature is verified; with
        another key, the bundle does not verify (signature-untrusted); a file that is no key is
        BadInput; one path for the sequence is a TypeError."""
        root = tmp_path / "bundle"
        shutil.copytree(api_study.root, root)
        private, public = openssh_key(tmp_path / "author")
        _, other = openssh_key(tmp_path / "other")
        sign_bundle(root, private, repro.open_verified)
        done = repro.verify(root, trusted_keys=[str(public)])
        assert done.ok and [s.status for s in done.signatures] == ["verified"]
        untrusted = repro.verify(root, trusted_keys=[other])
        assert "signature-untrusted" in {f.code for f in untrusted.findings}
        assert [s.status for s in repro.verify(root).signatures] == ["not-checked"]
        with pytest.raises(BadInput):
            repro.verify(root, trusted_keys=[tmp_path / "bundle" / "bagit.txt"])
        with pytest.raises(TypeError, match="trusted_keys"):
            repro.verify(root, trusted_keys=str(public))  # type: ignore[arg-type]

    def test_limits_and_jobs(self, api_study: StudyResult) -> None:
        """A limit set by name applies (a finding names it); jobs change no finding; an
        unknown limit, a value that is not a whole number, or 0 jobs is BadInput."""
        assert repro.verify(api_study.root, jobs=1).ok
        tight = repro.verify(api_study.root, limits={"max_files": 3})
        assert "scan-entries-limit" in {f.code for f in tight.findings}
        for limits in ({"max_filez": 3}, {"max_files": "3"}, {"max_files": -1}):
            with pytest.raises(BadInput, match="limits"):
                repro.verify(api_study.root, limits=limits)  # type: ignore[dict-item]
        with pytest.raises(BadInput, match="jobs"):
            repro.verify(api_study.root, jobs=0)


#: The doc whose example is run.
PYTHON_API = ROOT / "docs" / "python-api.md"


@pytest.mark.slow
class TestDocExample:
    """docs/python-api.md's example runs as written."""

    def test_the_example_runs(self, tmp_path: Path) -> None:
        """The doc's one fenced python block runs in a fresh interpreter (in an empty
        directory) to its end, which prints the line it says it prints."""
        text = PYTHON_API.read_text("utf-8")
        blocks = re.findall(r"^```python\n(.*?)^```$", text, flags=re.DOTALL | re.MULTILINE)
        assert len(blocks) == 1
        done = _python(blocks[0], cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1].startswith("verified: ")
        assert list(tmp_path.iterdir()) == []
