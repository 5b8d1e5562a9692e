"""Framed messages over the unix socket qemu connects to the guest's virtio-serial port."""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from collections.abc import Callable

from kbench import interrupts

from .protocol import MAX_FRAME, Message, decode_body

#: called regularly while waiting; raises (VmError) if the VM died
Check = Callable[[], None]

_POLL_S = 0.2


class ChannelTimeout(TimeoutError):
    """No complete frame before the deadline."""


class ChannelClosed(ConnectionError):
    """qemu closed the socket."""


class AgentChannel:
    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._sock.settimeout(_POLL_S)
        self._buf = bytearray()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()

    def send(self, msg: Message, check: Check, deadline: float | None = None) -> None:
        data = memoryview(msg.encode())
        while data:
            check()
            if deadline is not None and time.monotonic() > deadline:
                raise ChannelTimeout("timed out sending a request to the guest agent")
            try:
                n = self._sock.send(data[: 1 << 20])
            except TimeoutError:
                continue
            except OSError as e:
                raise ChannelClosed(f"sending to the guest agent failed: {e}") from e
            data = data[n:]

    def _fill(self, need: int, check: Check, deadline: float | None) -> None:
        chunk = bytearray(1 << 20)
        while len(self._buf) < need:
            if deadline is not None and time.monotonic() > deadline:
                raise ChannelTimeout("timed out waiting for the guest agent")
            # Bytes taken from the socket must reach the buffer: an interrupt between the
            # two would lose them and leave the stream out of frame (it waits _POLL_S at most).
            with interrupts.deferred():
                try:
                    n: int | None = self._sock.recv_into(chunk)
                except TimeoutError:
                    n = None
                except OSError as e:
                    raise ChannelClosed(f"reading from the guest agent failed: {e}") from e
                if n:
                    self._buf += chunk[:n]
            if n is None:
                check()
                continue
            if n == 0:
                raise ChannelClosed("qemu closed the agent socket")

    def recv(self, check: Check, deadline: float | None = None) -> Message:
        self._fill(4, check, deadline)
        (length,) = struct.unpack_from("<I", self._buf, 0)
        if length == 0 or length > MAX_FRAME:
            raise ChannelClosed(f"corrupt frame from the guest agent (length {length})")
        self._fill(4 + length, check, deadline)
        with interrupts.deferred():  # a frame is taken from the buffer whole, or not at all
            body = bytes(self._buf[4 : 4 + length])
            del self._buf[: 4 + length]
        return decode_body(body)


    def pull(self) -> None:
        """Take into the buffer, without waiting, whatever the socket holds (frames stay unread)."""
        chunk = bytearray(1 << 20)
        try:
            self._sock.setblocking(False)
            while True:
                with interrupts.deferred():
                    n = self._sock.recv_into(chunk)
                    self._buf += chunk[:n]
                if n == 0:
                    break
        except OSError:  # nothing more now (EAGAIN), or the socket is gone
            pass
        finally:
            with contextlib.suppress(OSError):
                self._sock.settimeout(_POLL_S)

    def received_frames(self) -> list[Message]:
        """Every whole frame received and not yet read, without waiting: what the buffer holds
        and what the socket still has (also after qemu closed it). For a guest that died."""
        self.pull()
        frames = []
        while len(self._buf) >= 4:
            (length,) = struct.unpack_from("<I", self._buf, 0)
            if length == 0 or length > MAX_FRAME or len(self._buf) < 4 + length:
                break
            try:
                frames.append(decode_body(bytes(self._buf[4 : 4 + length])))
            except ValueError:
                break
            del self._buf[: 4 + length]
        return frames


def connect_unix(path: str, check: Check, deadline: float) -> socket.socket:
    """Connects to qemu's server socket, retrying until it exists."""
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return s
        except (FileNotFoundError, ConnectionRefusedError):
            s.close()
        check()
        if time.monotonic() > deadline:
            raise ChannelTimeout(f"qemu did not create the agent socket {path}")
        time.sleep(0.02)
