"""``kind: git`` — documents in a git repository, synced by commit.

The ``git`` command-line client does the work (no Python git library). The repository is fetched
into a bare clone in the source's folder (``<storage>/sources/<name>/clone``); files are read from
git's object store, so there is no working tree to keep clean.

Each refresh:

1. fetches ``branch`` (default: the remote's default branch) and takes its HEAD commit;
2. lists the files below ``subpath`` that match ``include``/``exclude`` and a known format;
3. compares HEAD with the last synced commit kept in ``state.json`` beside the clone:
   ``git diff --name-status -M <last> <HEAD>`` names what was added, modified, deleted and renamed.
   Only those files are read and hashed; every other file keeps the content hash recorded for its
   blob at the last sync. The first sync reads everything; so does a sync after a force-push that
   lost the stored commit (it is no longer an ancestor of HEAD): a full comparison by content hash;
4. compares each file's hash with what the *index* holds for its URL (the ``state`` argument), so
   the index stays the source of truth: a refresh whose later stages failed after this scan (the
   stored commit already advanced) still finds the pages whose indexed hash differs, and a deleted
   file is one whose URL is indexed but no longer produced. A renamed file is its old URL deleted
   and its new URL new; its chunks' text is unchanged, so the embedding cache serves them.

AsciiDoc files are handed over with their ``include::`` directives resolved inside the repository
at the same commit (and the attributes of their Antora component); the included files are recorded
per page, so a change to a partial re-processes the pages that include it.

Credentials: only from the environment variable named by ``token_env``, passed to git per call as
an ``http.extraHeader`` through ``GIT_CONFIG_*`` environment variables: never on the command line,
never written to disk, never logged.
"""

from __future__ import annotations

import base64
import json
import os
import posixpath
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..config import GIT_TIMEOUT_SECONDS, SourceConfig, without_userinfo
from ..parsing import format_for_path
from ..records import Page
from .base import (MKDOCS_CONFIG_BYTES, MKDOCS_CONFIGS, RENAME_HINT, Log, ScanResult, Source, SourceError, content_hash, decode_body,
                   file_page_hash, mkdocs_hint, undecodable_name, vitepress_hint, whole_characters)
from .base import VITEPRESS_CONFIGS
from .front_matter import (FRONT_MATTER_BYTES, Route, front_matter_of, page_route, route_line, route_rel, route_url,
                           routes_apply, settle_urls)
from .local import (MAX_LISTED, URL_PATHS_CONFIGS, _quote, asciidoc_body, include_line, is_partial, map_url, markdown_body,
                    partials_line, path_excluded, path_glob, rst_body, unread_formats, url_paths_hint)

STATE_VERSION = 1
#: an HTTP(S) transfer slower than this many bytes per second for GIT_LOW_SPEED_SECONDS is abandoned by
#: git (http.lowSpeedLimit/http.lowSpeedTime, unless the operator set them): a server that accepts the
#: connection and then stalls costs a minute, not the whole timeout_seconds
GIT_LOW_SPEED_BYTES = 1000
GIT_LOW_SPEED_SECONDS = 60
#: ssh (OpenSSH) gives up on a host that does not answer the connection and its handshake within this
#: many seconds (ConnectTimeout), and on a connection whose server stops answering its keep-alives for
#: SSH_ALIVE_SECONDS × SSH_ALIVE_COUNT (ServerAliveInterval/CountMax): a dead or firewalled host costs
#: a minute or so, not the whole timeout_seconds; the operator's own values of these options win
SSH_CONNECT_SECONDS = 30
SSH_ALIVE_SECONDS = 15
SSH_ALIVE_COUNT = 4



#: git's words for an object of the repository it works on that cannot be read (a damaged pack or loose
#: object file, one that is gone): said by a command on the clone, the clone is damaged
_OBJECT_DAMAGE = re.compile(r"is corrupt|object file \S+ is empty|inflate: data stream error|unable to read [0-9a-f]{7,}|"
                            r"not a tree object|bad tree object|does not match index|cannot be accessed")
#: the commands that talk to the remote: git's complaint names the clone's own object store when it is its fault
_REMOTE_COMMANDS = ("fetch", "ls-remote")

#: the longest symlink target read (PATH_MAX); a longer link blob is no path
MAX_LINK_TARGET = 4096

class GitError(SourceError):
    """A git command failed; the message says which and how to fix it (never a credential)."""


class _GitTimeout(GitError):
    """A git command ran past the source's ``timeout_seconds`` (its message says so and what to do): not
    a wrong repo, branch or token, which the wrappers' hints would blame."""


class _CloneObjectError(GitError):
    """An object git listed in the clone cannot be read from it (gone, or damaged by a crash or a full
    disk): the clone's own fault, which a fetch never repairs (the remote believes the clone has it)."""


@dataclass(slots=True)
class _Change:
    status: str  # A M D R (C, T treated as M)
    path: str
    old_path: str | None = None


_public = without_userinfo  # a repository URL without user info (a password or token someone put in it)


def _running(pid: int) -> bool:
    """Whether a process runs (not gone, nor a zombie, whose command line is empty)."""
    try:
        return bool(Path(f"/proc/{pid}/cmdline").read_bytes())
    except OSError:
        return False


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill a process started in a session of its own, with every process it started, and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()  # not communicate(): a process that left the group (an ssh ControlPersist master) may hold the pipes
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


class _Git:
    """Runs git against the bare clone, with the credential (if any) only in the environment."""

    def __init__(self, git_dir: Path, *, token: str | None, repo: str, timeout: float = GIT_TIMEOUT_SECONDS,
                 setting: str = "timeout_seconds") -> None:
        self.git_dir = git_dir
        self.token = token
        self.repo = repo
        self.timeout = timeout  # the longest one git command may run
        self.setting = setting  # the config key that sets it, named when it runs out
        self._reader: subprocess.Popen[bytes] | None = None
        self._fixed: dict[str, str] | None = None  # what _non_interactive adds to git's environment, once known

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                            "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_CONFIG_COUNT")
               and not k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))}
        env.update(GIT_TERMINAL_PROMPT="0", GCM_INTERACTIVE="never", LC_ALL="C", LANG="C")
        if self._fixed is None:
            self._fixed = self._non_interactive(env)
        env.update(self._fixed)
        if self.token and re.match(r"^https?://", self.repo, re.I):
            basic = base64.b64encode(f"x-access-token:{self.token}".encode()).decode()
            env.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="http.extraHeader",
                       GIT_CONFIG_VALUE_0=f"Authorization: Basic {basic}")
        return env

    def _non_interactive(self, env: dict[str, str]) -> dict[str, str]:
        """The settings that keep git from waiting on a person or a stalled server, where the operator set
        none of their own: ssh in batch mode, and a low-speed limit for HTTP(S)."""
        fixed: dict[str, str] = {}
        ssh = self._batch_ssh_command(env)
        if ssh:
            fixed["GIT_SSH_COMMAND"] = ssh
        # each one the operator set (environment, else git config) is kept; git applies the check only when
        # both are set, so one set alone would turn it off: the other gets docs-rag's default
        for variable, key, default in (("GIT_HTTP_LOW_SPEED_LIMIT", "http.lowSpeedLimit", GIT_LOW_SPEED_BYTES),
                                       ("GIT_HTTP_LOW_SPEED_TIME", "http.lowSpeedTime", GIT_LOW_SPEED_SECONDS)):
            if not env.get(variable) and not self._config(key, env):
                fixed[variable] = str(default)
        return fixed

    def _batch_ssh_command(self, env: dict[str, str]) -> str:
        """The ssh command git would start, with ``-o BatchMode=yes`` added: GIT_TERMINAL_PROMPT does not
        reach ssh, which asks on the terminal to accept a host key or for a password or passphrase, and
        waits. The operator's own command (GIT_SSH_COMMAND, core.sshCommand, GIT_SSH, in git's order of
        precedence) is kept and the option added to it; one that is not OpenSSH (plink, a wrapper) is left
        as it is ("" here): git runs without a terminal anyway (``run``), so nothing can ask there."""
        command = env.get("GIT_SSH_COMMAND") or self._config("core.sshCommand", env)
        if not command and env.get("GIT_SSH"):
            command = shlex.quote(env["GIT_SSH"])
        command = command or "ssh"
        try:
            program = os.path.basename(shlex.split(command)[0])
        except (ValueError, IndexError):
            return ""
        variant = env.get("GIT_SSH_VARIANT", "auto").lower()
        openssh = variant == "ssh" or (variant == "auto" and program in ("ssh", "ssh.exe"))
        if not openssh:
            return ""
        # ssh takes the first value of an option it is given: the operator's command's own come first
        return (f"{command} -o BatchMode=yes -o ConnectTimeout={SSH_CONNECT_SECONDS} "
                f"-o ServerAliveInterval={SSH_ALIVE_SECONDS} -o ServerAliveCountMax={SSH_ALIVE_COUNT}")

    def _config(self, key: str, env: dict[str, str]) -> str:
        """A git setting as git sees it for the clone (its config, the user's, the system's); "" if unset."""
        proc = subprocess.run(["git", "--git-dir", str(self.git_dir), "config", "--get", key], capture_output=True,
                              stdin=subprocess.DEVNULL, env=env, timeout=self.timeout, check=False)
        return proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else ""

    def scrub(self, text: str) -> str:
        """git's message without a credential: the token, its header, and the user info of any URL in it
        (git names the repository with its user name where it wanted a password: ``could not read Password
        for 'https://<token>@github.com'``, and a token is often written as that user name)."""
        if self.token:
            text = text.replace(self.token, "***")
            text = text.replace(base64.b64encode(f"x-access-token:{self.token}".encode()).decode(), "***")
        text = _public(text)
        parts = urlsplit(self.repo) if "://" in self.repo else None
        # the password, else a user name alone (``https://<token>@host``): the token, wherever git writes it
        secret = parts and (parts.password if parts.password is not None else parts.username)
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***").replace(unquote(secret), "***")
        return text

    def run(self, *args: str, check: bool = True, git_dir: bool = True,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
        cmd = ["git", *(["--git-dir", str(self.git_dir)] if git_dir else []), *args]
        # a new session, with no controlling terminal and nothing on stdin: no program git starts (ssh, a
        # credential helper) can ask the operator anything and wait for the answer. Its process group is
        # also what is killed when git runs too long: ``git fetch`` over HTTP works through ``git
        # remote-http`` children, which outlived a kill of git alone for as long as the server held on.
        popen = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 start_new_session=True, env={**self.env(), **(env or {})})
        try:
            stdout, stderr = popen.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired as exc:
            raise _GitTimeout(f"git {args[0]} took longer than {self.timeout:g} s ({self.setting}); check that "
                           f"{_public(self.repo)} is reachable, or raise {self.setting} for a big repository on "
                           "a slow link") from exc
        finally:
            if popen.returncode is None:  # a timeout, or the run interrupted: nothing of git's is left running
                _kill_group(popen)
        proc = subprocess.CompletedProcess(cmd, popen.returncode, stdout, stderr)
        if check and proc.returncode != 0:
            err = self.scrub(proc.stderr.decode("utf-8", "replace"))
            err = "; ".join(ln.strip() for ln in err.splitlines() if ln.strip())  # one line, for logs
            message = f"git {args[0]} failed ({proc.returncode}): {err[:600]}"
            if git_dir and self._clone_damage(args[0], err):
                raise _CloneObjectError(message)
            raise GitError(message)
        return proc

    def _clone_damage(self, command: str, err: str) -> bool:
        """Whether git failed on an object of the clone that cannot be read (a damaged pack or object
        file), which no fetch repairs: a fetch is the clone's fault only where git names the clone's own
        object store (the remote's damage names the remote's, or comes as ``remote: …``)."""
        if not _OBJECT_DAMAGE.search(err):
            return False
        if command not in _REMOTE_COMMANDS:
            return True
        stores = {f"{self.git_dir}/objects/", f"{os.path.realpath(self.git_dir)}/objects/"}
        return any(store in err for store in stores)

    def out(self, *args: str) -> str:
        return self.run(*args).stdout.decode("utf-8", "replace")

    # -- blobs ------------------------------------------------------------------------------
    def blob(self, sha: str, *, limit: int | None = None) -> bytes:
        """The content of a blob, through one long-running ``git cat-file --batch``: at most ``limit``
        bytes of it (the rest is read past in pieces, never held), so a huge file costs no memory."""
        if self._reader is None:
            self._reader = subprocess.Popen(["git", "--git-dir", str(self.git_dir), "cat-file", "--batch"],
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.DEVNULL, env=self.env())
        assert self._reader.stdin is not None and self._reader.stdout is not None
        try:
            self._reader.stdin.write(sha.encode() + b"\n")
            self._reader.stdin.flush()
        except BrokenPipeError:  # cat-file ended on an object it could not read before
            raise _CloneObjectError(f"git cat-file cannot read object {sha} from the clone") from None
        header = self._reader.stdout.readline().decode().split()
        if len(header) != 3:  # "<sha> missing", or nothing: cat-file died on a damaged object
            raise _CloneObjectError(f"git cat-file: object {sha} is missing from the clone or damaged")
        size = int(header[2])
        data = self._reader.stdout.read(size if limit is None else min(size, limit))
        rest = size - len(data)
        while rest > 0:
            got = self._reader.stdout.read(min(rest, 2**20))
            if not got:
                raise GitError(f"git cat-file ended in the middle of object {sha}")
            rest -= len(got)
        self._reader.stdout.read(1)  # the newline after the content
        return data

    def close(self) -> None:
        if self._reader is not None:
            if self._reader.stdin:
                try:
                    self._reader.stdin.close()
                except BrokenPipeError:  # cat-file is gone already (a damaged object ended it)
                    pass
            self._reader.wait(timeout=30)
            self._reader = None


#: links followed while resolving one path, as Linux does (MAXSYMLINKS): beyond it, ELOOP
MAX_LINK_HOPS = 40


class _LinkSkip(Exception):
    """Why a symbolic link is not followed (the text goes into the log line)."""


class _RepoTree:
    """The entries of one commit as a checkout would have them on disk: paths resolve component by
    component, following symbolic links anywhere in the repository (also outside ``subpath``),
    as the operating system does (at most :data:`MAX_LINK_HOPS` links per path)."""

    def __init__(self, git: _Git, files: dict[str, str], links: dict[str, str], submodules: list[str]) -> None:
        self.git = git
        self.files = files
        self.links = links
        self.kinds: dict[str, str] = {"": "dir"}  # path → file, link, submodule or dir
        self.children: dict[str, list[str]] = {}  # folder → its entries' names
        for kind, paths in (("file", files), ("link", links), ("submodule", submodules)):
            for path in paths:
                self._add(path, kind)
        self._targets: dict[str, str | None] = {}
        self._previews: dict[str, str] = {}

    def _add(self, path: str, kind: str) -> None:
        while path not in self.kinds:
            self.kinds[path] = kind
            parent, _, name = path.rpartition("/")
            self.children.setdefault(parent, []).append(name)
            path, kind = parent, "dir"

    def target(self, link: str) -> str | None:
        """What ``link`` points to, None when its blob is longer than a path can be. A link's blob is
        its target: read no more than a path can be (a crafted 150 MB "link" cost 1 GB and put all of
        itself into a log line and the run's metadata)."""
        if link not in self._targets:
            raw = self.git.blob(self.links[link], limit=MAX_LINK_TARGET + 1)
            self._targets[link] = raw.decode("utf-8", "surrogateescape") if len(raw) <= MAX_LINK_TARGET else None
            self._previews[link] = raw[:200].decode("utf-8", "surrogateescape")
        return self._targets[link]

    def preview(self, link: str) -> str:
        """The first 200 bytes of a link's target, for a log line about a target too long."""
        self.target(link)
        return self._previews[link]

    def resolve(self, path: str) -> tuple[str, str]:
        """The real path of ``path`` and its kind (file, dir or submodule), its links followed;
        raises :class:`_LinkSkip` with the reason when it leads nowhere a checkout could read."""
        todo = list(reversed(path.split("/")))
        real: list[str] = []
        hops = 0
        while todo:
            part = todo.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if not real:
                    raise _LinkSkip("it points outside the repository")
                real.pop()
                continue
            if part.startswith("."):  # never read through a hidden file or folder, even one that is there
                raise _LinkSkip("it points into a hidden file or folder")
            here = "/".join([*real, part])
            kind = self.kinds.get(here)
            if kind == "link":
                hops += 1
                if hops > MAX_LINK_HOPS:
                    raise _LinkSkip(f"too many levels of links (a loop of links, or a chain of more than "
                                    f"{MAX_LINK_HOPS})")
                target = self.target(here)
                if target is None:
                    raise _LinkSkip(f"it goes through the symlink {here}, whose target is longer than "
                                    f"{MAX_LINK_TARGET} bytes, no path")
                if target.startswith("/"):
                    raise _LinkSkip("it points outside the repository")
                todo.extend(reversed(target.split("/")))
                continue
            if kind is None or (kind != "dir" and any(todo)):
                raise _LinkSkip("it points to nothing in the repository (a missing file)")
            real.append(part)
        where = "/".join(real)
        return where, self.kinds[where]


class _Walk:
    """What the listing of a source's folders collects."""

    def __init__(self, *, tree: dict[str, str], log: Log, source: str) -> None:
        self.tree = tree  # path as listed → blob sha
        self.log = log
        self.source = source
        self.skipped: list[str] = []  # "path -> target" of each link skipped
        self.linked: dict[str, str] = {}  # real folder → the link path it was walked under

    def skip(self, path: str, target: str, reason: str) -> None:
        self.skipped.append(f"{path} -> {target}")
        self.log(f"[DISCOVER] {self.source}: skipped the symlink {path} -> {target}: {reason}")


class GitSource(Source):
    cfg: SourceConfig

    def __init__(self, cfg, *, workdir: Path) -> None:  # noqa: ANN001 - a SourceConfig
        super().__init__(cfg, workdir=workdir)
        self.clone_dir = Path(workdir) / "clone"
        self.state_file = Path(workdir) / "state.json"

    # -- state --------------------------------------------------------------------------------
    def load_state(self) -> dict[str, Any]:
        try:
            data = json.loads(self.state_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) and data.get("version") == STATE_VERSION else {}

    def save_state(self, data: dict[str, Any]) -> None:
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.state_file.parent, prefix=".state-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, sort_keys=True)
        os.replace(tmp, self.state_file)

    # -- git ----------------------------------------------------------------------------------
    def _token(self) -> str | None:
        if not self.cfg.token_env:
            return None
        token = os.environ.get(self.cfg.token_env)
        if not token:
            raise GitError(f"sources.{self.name}.token_env: the environment variable {self.cfg.token_env} is not set "
                           "or empty; export the access token in it (or remove token_env for a public repository)")
        return token

    def _ensure_clone(self, git: _Git, log: Log) -> None:
        if (self.clone_dir / "HEAD").is_file() and (self.clone_dir / "objects").is_dir():
            damage = self._damage(git)
            if damage is None:
                return
            self._drop_damaged_clone(damage, log)
        elif self.clone_dir.is_symlink():
            # the clone moved to another disk and linked back: what the link leads to is never removed
            target = self._empty_link_target()
            log(f"[DISCOVER] {self.name}: the clone folder {self.clone_dir} is a link to the empty folder {target}; "
                "cloning again into it")
        elif self.clone_dir.is_dir():
            shutil.rmtree(self.clone_dir)  # a clone cut short (no HEAD or objects): this source's own, made again
        elif self.clone_dir.exists():
            self.clone_dir.unlink()
        self.clone_dir.parent.mkdir(parents=True, exist_ok=True)
        git.run("init", "--bare", "--quiet", str(self.clone_dir), git_dir=False)

    def _damage(self, git: _Git) -> str | None:
        """What git finds wrong with the clone, or None when it reads it: its HEAD, config and refs, and
        the object each ref names (one ``git for-each-ref``: no fsck of the whole object store). A crash
        or a full disk leaves an empty or garbled HEAD, config, packed-refs or ref file, which git then
        refuses (``not a git repository``) or skips, and a fetch fails on (``bad object refs/…``)."""
        proc = git.run("for-each-ref", "--format=%(objecttype) %(refname)", check=False)
        err = "; ".join(ln.strip() for ln in git.scrub(proc.stderr.decode("utf-8", "replace")).splitlines()
                        if ln.strip())
        if proc.returncode != 0 or "ignoring broken ref" in err:
            return err[:600] or f"git for-each-ref failed ({proc.returncode})"
        return None

    def _drop_damaged_clone(self, damage: str, log: Log) -> None:
        """Remove a clone git cannot read, to clone again: it is this source's own copy of the repository,
        and the index is not touched (the new scan compares every file with it, as after a deleted clone).
        What a ``clone`` link leads to is never removed: that is named, with the fix."""
        if self.clone_dir.is_symlink():
            target = Path(os.path.realpath(self.clone_dir))
            raise GitError(f"sources.{self.name}: the clone {self.clone_dir} (a link to {target}) is damaged, as a "
                           f"crash or a full disk leaves it, and git cannot read it: {damage}; nothing was removed, "
                           f"there or from the index. Empty the folder {target} (it holds only this source's copy "
                           "of the repository) and the next refresh clones into it")
        log(f"[DISCOVER] {self.name}: the clone {self.clone_dir} is damaged (a crash or a full disk?) and git cannot "
            f"read it: {damage}; it is this source's own copy of the repository: cloning again, the index is kept")
        try:
            shutil.rmtree(self.clone_dir)
        except OSError as exc:
            raise GitError(f"sources.{self.name}: the clone {self.clone_dir} is damaged and git cannot read it: "
                           f"{damage}; it cannot be removed ({exc.strerror or exc}): delete it by hand (it is this "
                           "source's own copy of the repository: the next refresh clones again, the index is "
                           "kept)") from None

    def _empty_link_target(self) -> Path:
        """Where the ``clone`` link leads, if that is an empty folder (a re-created volume, an empty mount
        point) to clone into again; anything else is the operator's to look at, and named."""
        target = Path(os.path.realpath(self.clone_dir))
        try:
            if target.is_dir() and not any(target.iterdir()):
                return target
            why = ("holds files but no git clone" if target.is_dir() else
                   "is not a folder" if target.exists() else "does not exist (a disk that is not mounted?)")
        except OSError as exc:
            why = f"cannot be read ({exc.strerror or exc})"
        raise GitError(f"sources.{self.name}: the clone folder {self.clone_dir} is a link to {target}, which {why}; "
                       "nothing was removed, there or from the index. Mount or create that folder, empty, and the "
                       f"next refresh clones into it; or remove the link ({self.clone_dir}) and the next refresh "
                       "clones in its place")

    def _remote_default_branch(self, git: _Git) -> str:
        try:
            out = git.out("ls-remote", "--symref", "--", self.cfg.repo, "HEAD")
        except GitError as exc:
            hint = "" if isinstance(exc, _GitTimeout) else "; check repo and, for a private repository, token_env"
            raise GitError(f"sources.{self.name}: could not reach {_public(self.cfg.repo or '')} to find its default "
                           f"branch: {exc}{hint}") from None
        m = re.search(r"^ref:\s+refs/heads/(\S+)\s+HEAD", out, re.M)
        if m and re.search(r"^[0-9a-f]{40,64}\s+HEAD$", out, re.M):
            return m.group(1)
        named = m.group(1) if m else self._unborn_head(git)
        if named:
            raise GitError(f"sources.{self.name}: the default branch of {_public(self.cfg.repo)} (its HEAD) is "
                           f"{named!r}, which does not exist there (an empty repository, or its default branch was "
                           f"deleted or renamed); set sources.{self.name}.branch to the branch to index, or have the "
                           "repository's default branch set to one that exists")
        raise GitError(f"sources.{self.name}: {_public(self.cfg.repo)} names no existing branch as its default (its "
                       "HEAD: an empty repository, or its default branch was deleted or renamed); set "
                       f"sources.{self.name}.branch to the branch to index")

    def _unborn_head(self, git: _Git) -> str | None:
        """The branch a remote's HEAD names when that branch does not exist ("unborn"), or None. git's
        protocol v2 sends it (``unborn HEAD symref-target:refs/heads/main``), but ``ls-remote`` (2.39)
        prints nothing for it: it is read from git's packet trace, which holds only protocol lines."""
        try:
            proc = git.run("ls-remote", "--symref", "--", self.cfg.repo, "HEAD", env={"GIT_TRACE_PACKET": "1"})
        except GitError:
            return None
        m = re.search(r"unborn HEAD symref-target:refs/heads/(\S+)", proc.stderr.decode("utf-8", "replace"))
        return m.group(1) if m else None

    def _fetch(self, git: _Git, log: Log) -> tuple[str, str]:
        """Fetch the branch; returns (branch, HEAD commit)."""
        branch = self.cfg.branch or self._remote_default_branch(git)
        log(f"[DISCOVER] {self.name}: fetching {_public(self.cfg.repo)} branch {branch}")
        self._drop_nesting_refs(git, branch, log)
        try:
            # --update-shallow: a shallow repository (a CI checkout of depth 1, a --depth mirror) sends its
            # branch with shallow roots, whose ref git otherwise rejects with only a warning, exit status 0
            git.run("fetch", "--quiet", "--force", "--no-tags", "--prune", "--update-shallow", "--", self.cfg.repo,
                    f"+refs/heads/{branch}:refs/remotes/origin/{branch}")
        except _CloneObjectError:
            raise  # the clone's own objects, not the remote: cloned again by ``scan``
        except GitError as exc:
            if "cannot lock ref" in str(exc):  # the clone's own refs in the way: not the repository's or token's fault
                raise GitError(f"sources.{self.name}: could not store branch {branch!r} of {_public(self.cfg.repo)} "
                               f"in the clone: {exc}; remove the folder {self.clone_dir} (this source's own copy of "
                               "the repository) and refresh again: it is fetched again in full, the index is "
                               "kept") from None
            if any(full in str(exc).lower() for full in ("no space left on device", "disk quota exceeded")):
                # the clone's disk, not the repository's or token's fault (before: "check repo, branch …")
                raise GitError(f"sources.{self.name}: the disk holding the clone {self.clone_dir} is full: fetching "
                               f"branch {branch!r} of {_public(self.cfg.repo)} failed: {exc}; free space and refresh "
                               "again (the fetch starts over; the index is kept)") from None
            hint = "" if isinstance(exc, _GitTimeout) else "; check repo, branch and, for a private repository, token_env"
            raise GitError(f"sources.{self.name}: could not fetch branch {branch!r} of {_public(self.cfg.repo)}: "
                           f"{exc}{hint}") from None
        proc = git.run("rev-parse", "--verify", "--quiet", f"refs/remotes/origin/{branch}^{{commit}}", check=False)
        head = proc.stdout.decode("utf-8", "replace").strip()
        if proc.returncode != 0 or not head:  # git fetched and stored nothing, yet said no error
            raise GitError(f"sources.{self.name}: the fetch of branch {branch!r} of {_public(self.cfg.repo)} ended "
                           f"without an error but stored no commit for it in the clone {self.clone_dir}; run "
                           f"`git fetch {_public(self.cfg.repo)} {branch}` by hand to see why")
        return branch, head

    def _drop_nesting_refs(self, git: _Git, branch: str, log: Log) -> None:
        """Delete the clone's tracking refs a fetch of ``branch`` cannot sit beside: git keeps refs as
        files, so ``refs/remotes/origin/release`` (a branch synced before) blocks
        ``refs/remotes/origin/release/1.0``, and the other way round, and ``--prune`` on a one-branch
        refspec never removes them. The clone is this source's own; the branch is fetched again at once."""
        want = f"refs/remotes/origin/{branch}"
        listed = git.out("for-each-ref", "--format=%(refname)", "refs/remotes/origin/").splitlines()
        for ref in listed:
            if ref != want and (want.startswith(ref + "/") or ref.startswith(want + "/")):
                git.run("update-ref", "-d", ref)
                log(f"[DISCOVER] {self.name}: removed {ref} from the clone: branch {branch} cannot be fetched "
                    "beside it (one name nests under the other)")

    @staticmethod
    def _entries(git: _Git, commit: str) -> tuple[dict[str, str], dict[str, str], list[str]]:
        """At ``commit``: regular files (path → blob sha), symbolic links (path → sha of the blob
        holding the link's target) and the paths of submodules."""
        raw = git.run("ls-tree", "-r", "-z", "--full-tree", commit).stdout.decode("utf-8", "surrogateescape")
        files: dict[str, str] = {}
        links: dict[str, str] = {}
        submodules: list[str] = []
        for entry in raw.split("\0"):
            if not entry:
                continue
            meta, _, path = entry.partition("\t")
            mode, kind, sha = meta.split()
            if kind == "blob" and mode in ("100644", "100755"):
                files[path] = sha
            elif kind == "blob" and mode == "120000":
                links[path] = sha
            elif kind == "commit":
                submodules.append(path)
        return files, links, submodules

    def _tree(self, git: _Git, commit: str, log: Log) -> tuple[dict[str, str], list[str], list[str], _RepoTree]:
        """repository path → blob sha of every file at ``commit``, symbolic links below ``subpath``
        included as a checkout has them (a link to a file is that file under the link's path; a link
        to a folder adds the folder's files under it). Also the links and submodules of this source
        that were skipped, each logged with the reason, and the commit's entries as a checkout has them
        (to resolve a path anywhere in the repository through its links).

        Below ``subpath`` the folders are walked in path order, like the local source walks its folder:
        a linked folder is walked under the link's path, except a link back to a folder it is inside (a
        loop) and a second link to a folder already walked through a link, so folders that link to one
        another cannot multiply the pages (50 links made 2^25 of them)."""
        files, links, submodules = self._entries(git, commit)
        repo = _RepoTree(git, files, links, submodules)
        sub = self.cfg.subpath.strip("/")
        walk = _Walk(tree=dict(files), log=log, source=self.name)
        # entries to look at: (real path, path as listed, the real folders it is inside), in path
        # order; a stack, not recursion: a repository may nest folders deeper than Python's limit
        stack: list[tuple[str, str, tuple[str, ...]]] = []

        def enter(folder: str, path: str, parents: tuple[str, ...]) -> None:
            names = sorted(n for n in repo.children.get(folder, []) if not n.startswith("."))
            inside = (*parents, folder)  # hidden files and folders are never read, nor the links in them
            stack.extend((posixpath.join(folder, n), posixpath.join(path, n), inside) for n in reversed(names))

        start = self._start(repo, sub, walk)
        if start is not None:
            enter(start, sub, ())
        while stack:
            real, path, parents = stack.pop()
            kind = repo.kinds[real]
            if kind == "file":
                walk.tree[path] = files[real]
            elif kind == "dir":
                enter(real, path, parents)
            elif kind == "link":
                folder = self._follow(repo, real, path, parents, walk)
                if folder is not None:
                    walk.linked[folder] = path
                    enter(folder, path, parents)
        gone = [p for p in submodules if not sub or p == sub or p.startswith(sub + "/")]
        for path in gone:
            log(f"[DISCOVER] {self.name}: skipped the submodule {path}: submodules are not fetched; add its "
                "repository as a git source of its own to index it")
        return walk.tree, walk.skipped, gone, repo

    def _start(self, repo: _RepoTree, sub: str, walk: _Walk) -> str | None:
        """The real folder ``subpath`` is (through links, as in a checkout), or None."""
        if repo.kinds.get(sub) == "dir":
            return sub
        if repo.kinds.get(sub) == "link":
            return self._follow(repo, sub, sub, (), walk)
        try:
            dest, kind = repo.resolve(sub)
        except _LinkSkip:
            return None
        return dest if kind == "dir" else None

    @staticmethod
    def _follow(repo: _RepoTree, real: str, path: str, parents: tuple[str, ...], walk: _Walk) -> str | None:
        """Resolve the link at ``real`` (listed as ``path``): a file goes into the tree; returns the
        real folder to walk under ``path``, or None (a file, or skipped with the reason)."""
        skip = walk.skip
        target = repo.target(real)
        if target is None:
            skip(path, repo.preview(real) + "…", f"its target is longer than {MAX_LINK_TARGET} bytes, no path")
            return None
        try:
            dest, kind = repo.resolve(real)
        except _LinkSkip as why:
            skip(path, target, str(why))
            return None
        if kind == "file":
            walk.tree[path] = repo.files[dest]
        elif kind == "submodule":
            skip(path, target, "it points to a submodule, and submodules are not fetched")
        elif dest in parents or not dest or real.startswith(dest + "/"):
            skip(path, target, "it loops back to a folder that contains it")
        elif dest in walk.linked:
            skip(path, target, f"that folder is already listed through the link {walk.linked[dest]}")
        else:
            return dest
        return None

    @staticmethod
    def _diff(git: _Git, old: str, new: str) -> list[_Change]:
        raw = git.run("diff", "--name-status", "-z", "-M", old, new) \
            .stdout.decode("utf-8", "surrogateescape").split("\0")
        changes: list[_Change] = []
        i = 0
        while i < len(raw) and raw[i]:
            status = raw[i][0]
            if status in "RC":
                changes.append(_Change("R" if status == "R" else "A", raw[i + 2], raw[i + 1]))
                i += 3
            else:
                changes.append(_Change(status if status in "AMD" else "M", raw[i + 1]))
                i += 2
        return changes

    def _rel(self, repo_path: str, *, partials: bool = False) -> str | None:
        """The path below ``subpath`` of a file of this source, or None when it is not one (a partial, which
        its site never publishes, neither, unless ``partials``)."""
        sub = self.cfg.subpath.strip("/")
        if sub:
            if not repo_path.startswith(sub + "/"):
                return None
            rel = repo_path[len(sub) + 1:]
        else:
            rel = repo_path
        if any(part.startswith(".") for part in rel.split("/")):
            return None
        if not any(path_glob(rel, g) for g in self.cfg.include):
            return None
        if path_excluded(rel, self.cfg.exclude):
            return None
        if format_for_path(rel) is None:
            return None
        if not partials and is_partial(rel):
            return None
        return rel

    def _git(self, token: str | None) -> _Git:
        return _Git(self.clone_dir, token=token, repo=self.cfg.repo or "", timeout=self.cfg.timeout_seconds,
                    setting=f"sources.{self.name}.timeout_seconds")

    # -- scan ---------------------------------------------------------------------------------
    def scan(self, state: dict[str, str], *, log: Log, mode: str = "refresh") -> ScanResult:
        if shutil.which("git") is None:
            raise GitError("the git command-line client is not installed; install git (e.g. apt-get install git)")
        t0 = time.perf_counter()
        token = self._token()
        git = self._git(token)
        try:
            return self._scan(git, state, log=log, mode=mode, t0=t0)
        except _CloneObjectError as exc:
            # an object the clone lists is gone or damaged (a crash, a full disk): no fetch brings it back,
            # so every refresh would fail on it for good. The clone is this source's own copy: clone again
            # (state.json is kept, so the scan diffs from the commit synced last) and scan once more.
            git.close()
            self._drop_damaged_clone(str(exc), log)
            git = self._git(token)
            return self._scan(git, state, log=log, mode=mode, t0=t0)
        finally:
            git.close()

    def _clear_stale_locks(self, log: Log) -> None:
        """Remove the ``*.lock`` files a git process killed mid-fetch left in the clone (a ref, the
        packed refs, the config): git refuses to touch a locked file ever after. The clone is this
        source's alone and a scan holds the source's lock, so a git process still working on it was
        left by a refresh that was killed (git runs in a session of its own, which a kill of the
        refresh's process group does not reach): it is stopped first, so no lock it holds is taken
        from under it."""
        if not self.clone_dir.is_dir():
            return
        self._stop_left_gits(log)
        for lock in sorted(self.clone_dir.rglob("*.lock")):
            if "objects" in lock.relative_to(self.clone_dir).parts[:1]:
                continue
            try:
                lock.unlink()
            except OSError as exc:
                raise GitError(f"sources.{self.name}: {lock} is left from a git process that was stopped and "
                               f"cannot be removed ({exc.strerror or exc}); remove it by hand") from None
            log(f"[DISCOVER] {self.name}: removed {lock.relative_to(self.clone_dir)} from the clone, left by a git "
                "process that was stopped mid-fetch")

    def _stop_left_gits(self, log: Log) -> None:
        """Kill the git processes (with their process groups) whose arguments name this clone, as
        ``--git-dir <clone>``: left by a refresh that was killed while git fetched (Linux's /proc)."""
        want = str(self.clone_dir).encode()
        left: list[int] = []
        try:
            entries = [e for e in Path("/proc").iterdir() if e.name.isdigit() and int(e.name) != os.getpid()]
        except OSError:
            return  # no /proc: nothing to look at
        for entry in entries:
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(a == b"--git-dir" and argv[i + 1:i + 2] == [want] for i, a in enumerate(argv)):
                left.append(int(entry.name))
        for pid in left:
            try:
                os.killpg(pid, signal.SIGKILL) if os.getpgid(pid) == pid else os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
            log(f"[DISCOVER] {self.name}: stopped git process {pid}, left running on the clone by a refresh "
                "that was killed")
        deadline = time.monotonic() + 10  # SIGKILL is at once: this waits for the kernel to end them
        while left and time.monotonic() < deadline:
            left = [p for p in left if _running(p)]
            if left:
                time.sleep(0.05)

    def _scan(self, git: _Git, state: dict[str, str], *, log: Log, mode: str, t0: float) -> ScanResult:
        self._clear_stale_locks(log)
        stored = self.load_state()
        same_source = (stored.get("repo") == _public(self.cfg.repo or "") and stored.get("subpath") == self.cfg.subpath
                       and (self.cfg.branch is None or stored.get("branch") == self.cfg.branch))
        last: str | None = stored.get("commit") if same_source else None
        cloned = (self.clone_dir / "HEAD").is_file()
        if mode == "reparse" and cloned and last and self._has_commit(git, last):
            branch, head = stored.get("branch", self.cfg.branch or ""), last
            log(f"[DISCOVER] {self.name}: reparse: reading commit {head[:12]} from the clone, no fetch")
        else:
            if mode == "reparse":
                log(f"[DISCOVER] {self.name}: reparse: nothing synced yet, fetching first")
            self._ensure_clone(git, log)
            branch, head = self._fetch(git, log)
        tree, skipped_links, submodules, repo_tree = self._tree(git, head, log)
        for line in unread_formats(self.name, self.cfg.include):
            log(line)
        if (partial_count := sum(1 for p in tree if self._rel(p) is None and self._rel(p, partials=True) is not None)):
            log(partials_line(self.name, partial_count))
        if any(format_for_path(p) in ("markdown", "mdx") for p in tree):
            sub = self.cfg.subpath.strip("/")
            config = next((f for folder in dict.fromkeys((sub, posixpath.dirname(sub))) for f in
                           (posixpath.join(folder, name) for name in MKDOCS_CONFIGS) if f in repo_tree.files), None)
            if config is not None and (hint := mkdocs_hint(
                    self.name, f"{config} of the repository",
                    decode_body(git.blob(repo_tree.files[config], limit=MKDOCS_CONFIG_BYTES), None),
                    self.cfg.heading_anchors)):
                log(hint)
            config = next((f for folder in dict.fromkeys((sub, posixpath.dirname(sub))) for f in
                           (posixpath.join(folder, name) for name in VITEPRESS_CONFIGS) if f in repo_tree.files), None)
            if config is not None and (hint := vitepress_hint(self.name, f"{config} of the repository",
                                                              self.cfg.heading_anchors)):
                log(hint)
            found_config = next(((generator, f) for folder in dict.fromkeys((sub, posixpath.dirname(sub)))
                                 for generator, name in URL_PATHS_CONFIGS
                                 if (f := posixpath.join(folder, name)) in repo_tree.files), None)
            if found_config is not None and (hint := url_paths_hint(
                    self.name, f"{found_config[1]} of the repository", found_config[0], self.cfg,
                    [rel for p in tree if (rel := self._rel(p)) is not None])):
                log(hint)

        fallback: str | None = None
        changes: list[_Change] | None = None
        if not stored:
            fallback = "first sync"
        elif not same_source:
            fallback = "repo, branch or subpath changed since the last sync"
        elif not last or not self._has_commit(git, last):
            fallback = f"the stored commit {str(last)[:12]} is not in the repository any more (history rewritten)"
        elif last != head and not self._is_ancestor(git, last, head):
            fallback = f"the stored commit {last[:12]} is not an ancestor of {head[:12]} (history rewritten by a force-push)"
        if last and self._has_commit(git, last):
            changes = self._diff(git, last, head)  # also after a force-push: the counts, for the notes
        if mode in ("reparse", "force", "resync") and fallback is None:
            fallback = f"mode {mode}: every file is read again"
        if fallback:
            log(f"[DISCOVER] {self.name}: full comparison by content hash: {fallback}")
        elif last == head:
            log(f"[DISCOVER] {self.name}: at {head[:12]}, no new commit")
        else:
            log(f"[DISCOVER] {self.name}: {last[:12]}..{head[:12]}: {len(changes or [])} files changed in the repository")

        # files the diff names (its new paths): read again even if a stale cache entry matched
        touched = {c.path for c in changes or [] if c.status != "D"} if not fallback else set()
        cache: dict[str, dict[str, Any]] = stored.get("files", {}) if not fallback else {}

        def blob_at(repo_path: str) -> str | None:
            """The blob a checkout reads at ``repo_path``: through links anywhere in the repository (also
            outside ``subpath``), never outside it; None where it reads no file."""
            sha = tree.get(repo_path)
            if sha is None:
                try:
                    real, kind = repo_tree.resolve(repo_path)
                except _LinkSkip:
                    return None
                sha = repo_tree.files.get(real) if kind == "file" else None
            return sha

        def read_text(repo_path: str) -> str | None:
            sha = blob_at(repo_path)
            return decode_body(git.blob(sha, limit=self.cfg.max_bytes), None) if sha else None

        sub = self.cfg.subpath.strip("/")
        pages: list[Page] = []
        new_cache: dict[str, dict[str, Any]] = {}
        unmapped = 0
        unresolved_total = 0
        read_count = 0
        bad_names: list[str] = []
        files: list[tuple[str, str, Any]] = []  # (repo path, rel, the route its front matter sets)
        claims: list[tuple[str, str, str | None]] = []
        for repo_path in sorted(tree):
            rel = self._rel(repo_path)
            if rel is None:
                continue
            shown = undecodable_name(repo_path)
            if shown is not None:
                bad_names.append(shown)
                log(f"[DISCOVER] {self.name}: skipped {shown}: its name is not valid UTF-8; {RENAME_HINT}")
                continue
            url = map_url(rel, url_rules=self.cfg.url_rules, url_template=self.cfg.url_template,
                          url_paths=self.cfg.url_paths)
            if url is None:
                url = _quote(repo_path)  # a path as a (relative) URL: "C# notes.md" → "C%23%20notes.md"
                unmapped += 1
                if self.cfg.url_rules or self.cfg.url_template:
                    log(f"[DISCOVER] {self.name}: warning: no url_rules entry or url_template maps {rel}; "
                        f"indexed under its repository path {repo_path}")
            route = self._route(git, rel, tree[repo_path], cache.get(rel), touched=repo_path in touched, url=url,
                                log=log)
            files.append((repo_path, rel, route))
            claims.append((rel, url, route_url(Route(*route), self.cfg.url_template)
                           if route and routes_apply(self.cfg, rel) else None))
        urls = settle_urls(claims, source=self.name, log=log)
        for repo_path, rel, route in files:
            url = urls[rel]
            if url is None:
                continue
            blob = tree[repo_path]
            fmt = format_for_path(rel) or "markdown"
            entry = cache.get(rel)
            valid = (entry is not None and repo_path not in touched and entry.get("blob") == blob
                     and all(blob_at(d) == b for d, b in (entry.get("deps") or {}).items()))
            digest: str | None = entry["hash"] if valid and entry else None
            body: str | None = None
            meta: dict[str, Any] = {}
            deps: dict[str, str | None] = dict(entry.get("deps") or {}) if valid and entry else {}

            def load() -> tuple[str, str, dict[str, str | None], list[str]]:
                data = git.blob(blob, limit=self.cfg.max_bytes + 1)
                if len(data) > self.cfg.max_bytes:
                    data = whole_characters(data[: self.cfg.max_bytes], None)  # no split character
                    log(f"[FETCH] {self.name}: cut off {rel}: the file is over max_bytes ({self.cfg.max_bytes} "
                        "bytes); only its first max_bytes are indexed")
                if fmt == "asciidoc":
                    text, dep_found, missing = asciidoc_body(decode_body(data, None),
                                                             path=repo_path, read=read_text,
                                                             attributes=self.cfg.asciidoc_attributes)
                    return text, content_hash(text), {d: blob_at(d) for d in dep_found}, missing
                if fmt == "rst":  # a "/" include is from the documents' top folder (Sphinx's source directory)
                    text, dep_found, missing = rst_body(decode_body(data, None), path=repo_path, read=read_text,
                                                        root=sub)
                    return text, content_hash(text), {d: blob_at(d) for d in dep_found}, missing
                if fmt in ("markdown", "mdx") and (md := markdown_body(decode_body(data, None), path=repo_path, fmt=fmt,
                                                                       read=read_text, root=sub)) is not None:
                    text, dep_found, missing = md
                    return text, content_hash(text), {d: blob_at(d) for d in dep_found}, missing
                return decode_body(data, None), content_hash(data), {}, []

            missing: list[str] = []
            if digest is None:
                body, digest, deps, missing = load()
                read_count += 1
            page_hash = file_page_hash(rel, digest)
            status = self.status(url, page_hash, state, mode)
            if status != "unchanged" and body is None:
                body, digest, deps, missing = load()
                read_count += 1
                page_hash = file_page_hash(rel, digest)
                status = self.status(url, page_hash, state, mode)
            if status != "unchanged":
                log(f"[FETCH] {self.name}: {rel}: {status} at {head[:12]}")
                meta["commit"] = head
                if missing:
                    meta["unresolved_includes"] = missing
                    unresolved_total += len(missing)
                    for target in missing:
                        log(f"[FETCH] {self.name}: {rel}: {include_line(fmt, target)}; skipped")
            else:
                body = None
            new_cache[rel] = {"blob": blob, "hash": digest, "deps": deps, "route": route,
                              **({"url_paths": self.cfg.url_paths} if self.cfg.url_paths != "plain" else {})}
            pages.append(Page(source=self.name, page_url=url, path=rel, content_hash=page_hash,
                              format=fmt, body=body, status=status, metadata=meta))

        present = {p.page_url for p in pages}
        deleted = sorted(u for u in state if u not in present)
        notes = self._notes(changes, fallback, pages, deleted, sub)
        notes.update(commit=head, branch=branch, files=len(pages), files_read=read_count)
        if last:
            notes["previous_commit"] = last
        if unmapped:
            notes["unmapped_files"] = unmapped
        if unresolved_total:
            notes["unresolved_includes"] = unresolved_total
        if bad_names:
            notes["names_not_utf8"] = bad_names[:MAX_LISTED]
        if skipped_links:
            notes["skipped_links"] = len(skipped_links)
            notes["skipped_link_list"] = skipped_links[:MAX_LISTED]
        if submodules:
            notes["skipped_submodules"] = submodules[:MAX_LISTED]
        self.save_state({"version": STATE_VERSION, "repo": _public(self.cfg.repo or ""), "branch": branch,
                         "subpath": self.cfg.subpath, "commit": head, "previous_commit": last,
                         "synced_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "files": new_cache})
        log(f"[DISCOVER] {self.name}: {len(pages)} files at {head[:12]}, {read_count} read, "
            f"{sum(p.status == 'new' for p in pages)} new, {sum(p.status == 'changed' for p in pages)} changed, "
            f"{len(deleted)} gone ({time.perf_counter() - t0:.2f} s)")
        return ScanResult(pages=pages, deleted=deleted, notes=notes)

    def _notes(self, changes: list[_Change] | None, fallback: str | None, pages: list[Page], deleted: list[str],
               sub: str) -> dict[str, Any]:
        """Counts of the source's files the diff names (or, without a diff, from the statuses)."""
        notes: dict[str, Any] = {}
        if changes is not None:
            mine = lambda p: p is not None and self._rel(p) is not None  # noqa: E731
            notes.update(
                files_added=sum(c.status == "A" and mine(c.path) for c in changes),
                files_modified=sum(c.status == "M" and mine(c.path) for c in changes),
                files_deleted=sum(c.status == "D" and mine(c.path) for c in changes),
                files_renamed=sum(c.status == "R" and (mine(c.path) or mine(c.old_path)) for c in changes))
        else:
            notes.update(files_added=sum(p.status == "new" for p in pages),
                         files_modified=sum(p.status == "changed" for p in pages),
                         files_deleted=len(deleted), files_renamed=0)
        if fallback:
            notes["fallback"] = fallback
        return notes

    def _route(self, git: _Git, rel: str, blob: str, entry: dict[str, Any] | None, *, touched: bool, url: str,
               log: Log) -> list[Any] | None:
        """The route the front matter of the file at ``rel`` (blob ``blob``) sets, as ``[key, path, whole]``
        (:class:`~.front_matter.Route`), or None: from the cache when it holds that blob's, else read from
        the blob's first bytes (and the keys it sets but cannot be taken logged). Read for every Markdown
        file, whether or not the source's settings use it now, so that turning ``front_matter_urls`` on or
        setting a ``url_template`` needs no read."""
        if format_for_path(rel) not in ("markdown", "mdx"):
            return None
        if entry is not None and not touched and entry.get("blob") == blob and "route" in entry \
                and entry.get("url_paths", "plain") == self.cfg.url_paths:  # (a slug is beside the published folder)
            route = entry["route"]
            return route if route is None or (isinstance(route, list) and len(route) == 3) else None
        head = git.blob(blob, limit=min(FRONT_MATTER_BYTES, self.cfg.max_bytes))
        found, ignored = page_route(front_matter_of(head, rel=rel), rel=route_rel(self.cfg, rel))
        if ignored and routes_apply(self.cfg, rel):
            log(route_line(self.name, rel, ignored, route_url(found, self.cfg.url_template) if found else url))
        return [found.key, found.path, found.whole] if found is not None else None

    @staticmethod
    def _has_commit(git: _Git, sha: str) -> bool:
        return git.run("cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0

    @staticmethod
    def _is_ancestor(git: _Git, old: str, new: str) -> bool:
        return git.run("merge-base", "--is-ancestor", old, new, check=False).returncode == 0
