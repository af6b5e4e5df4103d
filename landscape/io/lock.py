"""One job per surface file: a lock of our own beside it, ``<surface file>.lock``.

HDF5's own file lock is often switched off on parallel file systems
(``HDF5_USE_FILE_LOCKING=FALSE``), and two jobs writing one file then destroy
it.  So rank 0 holds an ``fcntl`` lock on a small sidecar file for the whole
job; it works on local disks, NFS (through lockd) and Lustre mounted with
``flock``, and the kernel drops it when the process dies, even by ``kill -9``.
The sidecar holds the owner (host, pid, start time) so a refused job can say
who has the file.  Where the file system has no locks at all, the sidecar is
created exclusively instead and an owner on this host that is no longer alive
is taken over.  The sidecar is removed when the job ends.

The sidecar's path is predictable, so whoever may write to the folder could plant a symbolic link
there to make the job overwrite the file it points to: the sidecar is opened without following
links (``O_NOFOLLOW``), and a link, a file with other hard links or a file that holds no owner
record of ours is refused rather than truncated.  A full disk refusing the owner record is an input
error naming the sidecar, which is removed.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import time

from .. import checks
from ..errors import InputError, param
from .atomic import HOST, pid_alive, write_error

SUFFIX = ".lock"
NO_LOCKS = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
OWNER_KEYS = {"host", "pid", "started", "command"}


class SurfaceLock:
    """Exclusive use of ``path`` by this process, as a context manager."""

    def __init__(
        self,
        path: str,
        command: str = "",
        what: str = "surface file",
        field: str = "surf_file",
        doing: str = "being computed",
    ):
        self.path = path + SUFFIX
        self.what, self.field, self.doing = what, field, doing
        self.surface = path
        self.owner = {
            "host": HOST,
            "pid": os.getpid(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "command": command[:500],
        }
        self.fd: int | None = None
        self.exclusive_file = False

    def __enter__(self) -> SurfaceLock:
        for _ in range(100):  # retried only when the file was replaced between open and lock
            self._check_entry()
            opened = self._open()
            if opened is None:
                continue  # removed between two tries to open it
            fd, made = opened
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in NO_LOCKS and made:  # no locks here, but this job made the file exclusively
                    return self._own(fd)
                os.close(fd)
                if exc.errno in NO_LOCKS:
                    return self._create_exclusively()
                if exc.errno in (errno.EACCES, errno.EAGAIN):
                    raise self._busy() from None
                raise
            if self._same_file(fd):
                try:
                    self._check_ours(fd)
                except InputError:
                    os.close(fd)
                    raise
                self._write_owner(fd)
                self.fd = fd
                return self
            os.close(fd)  # the holder removed it as we opened it: take the new one
        raise InputError(f"could not lock {self.path}: it keeps being replaced")

    def __exit__(self, *exc) -> None:
        if self.fd is None and not self.exclusive_file:
            return
        try:
            os.remove(self.path)  # still locked: a job that opened it now sees another file and retries
        except OSError:
            pass
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        self.exclusive_file = False

    def _open(self) -> tuple[int, bool] | None:
        """The sidecar opened without following a link, and whether this call made it (created exclusively:
        on a file system without locks, that is the lock); None when it vanished between two tries."""
        flags = os.O_RDWR | os.O_NONBLOCK | NOFOLLOW
        try:
            try:
                return os.open(self.path, flags | os.O_CREAT | os.O_EXCL, 0o644), True
            except FileExistsError:
                return os.open(self.path, flags), False
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # a link planted between the check and the open
                raise self._foreign("a symbolic link") from None
            raise InputError(
                f"lock file {self.path} cannot be opened ({exc.strerror}); if no job is computing "
                f"{self.surface}, remove it"
            ) from None

    def _same_file(self, fd: int) -> bool:
        try:
            return os.path.samestat(os.fstat(fd), os.lstat(self.path))
        except FileNotFoundError:
            return False

    def _foreign(self, what: str) -> InputError:
        return InputError(
            f"lock file {self.path} is {what}, which no job of landscape makes; remove it or give another "
            f"{param(self.field)} (it is left as it is)",
        )

    def _check_entry(self) -> None:
        """What is at the sidecar's path, without following a link: nothing, or a regular file."""
        try:
            mode = os.lstat(self.path).st_mode
        except FileNotFoundError:
            return
        if stat.S_ISLNK(mode):
            raise self._foreign(f"a symbolic link to {os.readlink(self.path)}")
        if not stat.S_ISREG(mode):
            found = "directory" if stat.S_ISDIR(mode) else "FIFO" if stat.S_ISFIFO(mode) else "special file"
            raise InputError(
                f"lock file {self.path} is a {found}, not a regular file; remove it (no job of "
                f"landscape made it) or give another {param(self.field)}",
            )

    def _check_ours(self, fd: int) -> None:
        """Before truncating the sidecar: a file of one name only, empty or holding an owner record (a
        job that died leaves one), never another file hard-linked here."""
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise self._foreign("not a regular file")
        if info.st_nlink > 1:
            raise self._foreign(f"a file with {info.st_nlink} names (hard links)")
        if info.st_size == 0:
            return
        try:
            owner = checks.json_loads(os.pread(fd, 4096, 0).decode()) if info.st_size <= 4096 else None
        except (UnicodeDecodeError, ValueError):
            owner = None
        if not (isinstance(owner, dict) and owner and set(owner) <= OWNER_KEYS):
            raise self._foreign(f"a file of {info.st_size} bytes that holds no lock record")

    def _write_owner(self, fd: int) -> None:
        """The owner record into the sidecar; a write the system refuses (a full disk) closes and removes
        the sidecar (it is ours: locked, or just created) and is an input error naming it."""
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(self.owner).encode(), 0)
        except OSError as exc:
            try:
                os.remove(self.path)
            except OSError:
                pass
            os.close(fd)
            raise write_error("lock file", self.path, exc) from None

    def _create_exclusively(self) -> SurfaceLock:
        """For file systems without locks: the sidecar's existence is the lock."""
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                owner = self._read_owner()
                if owner.get("host") == HOST and isinstance(owner.get("pid"), int) and not pid_alive(owner["pid"]):
                    os.remove(self.path)  # its job died without cleaning up
                    continue
                raise self._busy() from None
            return self._own(fd)
        raise self._busy()

    def _own(self, fd: int) -> SurfaceLock:
        """The sidecar this job created exclusively is the lock: its owner record written, the file closed."""
        self._write_owner(fd)
        os.close(fd)
        self.exclusive_file = True
        return self

    def _read_owner(self) -> dict:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | NOFOLLOW)
        except OSError:
            return {}
        try:
            owner = checks.json_loads(os.read(fd, 4096) or b"{}")
            return owner if isinstance(owner, dict) else {}
        except ValueError:
            return {}
        finally:
            os.close(fd)

    def _busy(self) -> InputError:
        owner = self._read_owner()
        who = (
            f"process {owner.get('pid')} on {owner.get('host')} since {owner.get('started')}"
            if owner
            else "another process"
        )
        return InputError(
            f"{self.what} {self.surface} is {self.doing} by {who} (lock {self.path}); "
            f"wait for that job to end, or give another {param(self.field)}",
        )
