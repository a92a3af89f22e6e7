// Package wire holds the framing shared by both ends of the adb protocol:
// the 24-byte transport messages a device exchanges with an adb server, the
// shell v2 packets, the sync sub-protocol and the smart-socket requests a
// client sends to an adb server. It does no I/O beyond the reader or writer
// it is given, so the simulated device (lab/simdevice) and the host client
// (lab/adb) agree on one definition.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Transport commands (little-endian ASCII).
const (
	CmdSYNC uint32 = 0x434e5953
	CmdCNXN uint32 = 0x4e584e43
	CmdOPEN uint32 = 0x4e45504f
	CmdOKAY uint32 = 0x59414b4f
	CmdCLSE uint32 = 0x45534c43
	CmdWRTE uint32 = 0x45545257
	CmdAUTH uint32 = 0x48545541
	CmdSTLS uint32 = 0x534c5453
)

// Version is the protocol version adb 29 speaks; from it on checksums are
// not verified.
const Version uint32 = 0x01000001

// MaxPayload is the largest payload this package will read or send.
const MaxPayload = 256 * 1024

// Message is one transport message.
type Message struct {
	Cmd  uint32
	Arg0 uint32
	Arg1 uint32
	Data []byte
}

// CmdName returns the four-letter name of a command, or its hex value.
func CmdName(c uint32) string {
	switch c {
	case CmdSYNC, CmdCNXN, CmdOPEN, CmdOKAY, CmdCLSE, CmdWRTE, CmdAUTH, CmdSTLS:
		b := make([]byte, 4)
		binary.LittleEndian.PutUint32(b, c)
		return string(b)
	}
	return fmt.Sprintf("0x%08x", c)
}

// String describes m for logs and errors.
func (m Message) String() string {
	return fmt.Sprintf("%s(%d, %d, %d bytes)", CmdName(m.Cmd), m.Arg0, m.Arg1, len(m.Data))
}

// checksum is the byte sum older peers verify; newer ones ignore it.
func checksum(b []byte) uint32 {
	var s uint32
	for _, c := range b {
		s += uint32(c)
	}
	return s
}

// WriteMessage writes m as one header plus payload in a single Write, so
// concurrent writers serialised by a mutex never interleave.
func WriteMessage(w io.Writer, m Message) error {
	buf := make([]byte, 24+len(m.Data))
	binary.LittleEndian.PutUint32(buf[0:], m.Cmd)
	binary.LittleEndian.PutUint32(buf[4:], m.Arg0)
	binary.LittleEndian.PutUint32(buf[8:], m.Arg1)
	binary.LittleEndian.PutUint32(buf[12:], uint32(len(m.Data)))
	binary.LittleEndian.PutUint32(buf[16:], checksum(m.Data))
	binary.LittleEndian.PutUint32(buf[20:], m.Cmd^0xffffffff)
	copy(buf[24:], m.Data)
	_, err := w.Write(buf)
	return err
}

// ReadMessage reads one message, refusing payloads above max bytes and
// headers whose magic does not match.
func ReadMessage(r io.Reader, max uint32) (Message, error) {
	var h [24]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return Message{}, err
	}
	m := Message{
		Cmd:  binary.LittleEndian.Uint32(h[0:]),
		Arg0: binary.LittleEndian.Uint32(h[4:]),
		Arg1: binary.LittleEndian.Uint32(h[8:]),
	}
	n := binary.LittleEndian.Uint32(h[12:])
	if magic := binary.LittleEndian.Uint32(h[20:]); magic != m.Cmd^0xffffffff {
		return Message{}, fmt.Errorf("adb message %s: bad magic 0x%08x", CmdName(m.Cmd), magic)
	}
	if n > max {
		return Message{}, fmt.Errorf("adb message %s: payload of %d bytes exceeds %d", CmdName(m.Cmd), n, max)
	}
	if n > 0 {
		m.Data = make([]byte, n)
		if _, err := io.ReadFull(r, m.Data); err != nil {
			return Message{}, fmt.Errorf("adb message %s payload: %w", CmdName(m.Cmd), err)
		}
	}
	return m, nil
}

// Shell v2 packet ids.
const (
	ShellStdin      byte = 0
	ShellStdout     byte = 1
	ShellStderr     byte = 2
	ShellExit       byte = 3
	ShellCloseStdin byte = 4
	ShellWindowSize byte = 5
)

// AppendShellPacket appends one shell v2 packet ([id][len u32 LE][data]) to b.
func AppendShellPacket(b []byte, id byte, data []byte) []byte {
	b = append(b, id)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
	return append(b, data...)
}

// ReadShellPacket reads one shell v2 packet. Packets larger than max bytes
// are an error.
func ReadShellPacket(r io.Reader, max int) (id byte, data []byte, err error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(h[1:])
	if int64(n) > int64(max) {
		return 0, nil, fmt.Errorf("shell v2 packet %d: %d bytes exceeds %d", h[0], n, max)
	}
	data = make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return 0, nil, fmt.Errorf("shell v2 packet %d: %w", h[0], err)
	}
	return h[0], data, nil
}

// Sync sub-protocol ids.
const (
	SyncSTAT = "STAT"
	SyncSTA2 = "STA2"
	SyncLST2 = "LST2"
	SyncLIST = "LIST"
	SyncDENT = "DENT"
	SyncSEND = "SEND"
	SyncRECV = "RECV"
	SyncDATA = "DATA"
	SyncDONE = "DONE"
	SyncOKAY = "OKAY"
	SyncFAIL = "FAIL"
	SyncQUIT = "QUIT"
)

// SyncMaxData is the largest DATA chunk the sync protocol allows.
const SyncMaxData = 64 * 1024

// AppendSync appends a sync request or reply: 4-byte id, u32 LE, then data.
func AppendSync(b []byte, id string, n uint32, data []byte) []byte {
	b = append(b, id[:4]...)
	b = binary.LittleEndian.AppendUint32(b, n)
	return append(b, data...)
}

// ReadSyncHeader reads the 8-byte header of a sync packet.
func ReadSyncHeader(r io.Reader) (id string, n uint32, err error) {
	var h [8]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return "", 0, err
	}
	return string(h[:4]), binary.LittleEndian.Uint32(h[4:]), nil
}

// Stat2 is the reply to STA2/LST2 (stat_v2).
type Stat2 struct {
	Error uint32 // errno, 0 when the path exists
	Dev   uint64
	Ino   uint64
	Mode  uint32
	Nlink uint32
	UID   uint32
	GID   uint32
	Size  uint64
	Atime int64
	Mtime int64
	Ctime int64
}

// Stat2Size is the encoded size of a STA2 reply including its id.
const Stat2Size = 4 + 68

// AppendStat2 appends a STA2 (or LST2) reply with id to b.
func AppendStat2(b []byte, id string, s Stat2) []byte {
	b = append(b, id[:4]...)
	le := binary.LittleEndian
	b = le.AppendUint32(b, s.Error)
	b = le.AppendUint64(b, s.Dev)
	b = le.AppendUint64(b, s.Ino)
	b = le.AppendUint32(b, s.Mode)
	b = le.AppendUint32(b, s.Nlink)
	b = le.AppendUint32(b, s.UID)
	b = le.AppendUint32(b, s.GID)
	b = le.AppendUint64(b, s.Size)
	b = le.AppendUint64(b, uint64(s.Atime))
	b = le.AppendUint64(b, uint64(s.Mtime))
	b = le.AppendUint64(b, uint64(s.Ctime))
	return b
}

// ParseStat2 decodes the 68 bytes after a STA2 id.
func ParseStat2(p []byte) (Stat2, error) {
	if len(p) != 68 {
		return Stat2{}, fmt.Errorf("STA2 reply: %d bytes, want 68", len(p))
	}
	le := binary.LittleEndian
	return Stat2{
		Error: le.Uint32(p[0:]), Dev: le.Uint64(p[4:]), Ino: le.Uint64(p[12:]),
		Mode: le.Uint32(p[20:]), Nlink: le.Uint32(p[24:]), UID: le.Uint32(p[28:]), GID: le.Uint32(p[32:]),
		Size: le.Uint64(p[36:]), Atime: int64(le.Uint64(p[44:])), Mtime: int64(le.Uint64(p[52:])), Ctime: int64(le.Uint64(p[60:])),
	}, nil
}

// Host smart-socket framing: a client writes "%04x" + request; the server
// answers "OKAY" or "FAIL" + "%04x" + message.

// AppendRequest frames a smart-socket request.
func AppendRequest(b []byte, req string) []byte {
	return append(b, fmt.Sprintf("%04x%s", len(req), req)...)
}

// ErrFail is wrapped by errors carrying a FAIL answer.
var ErrFail = errors.New("adb: FAIL")

// ReadStatus reads "OKAY", or "FAIL" plus a length-prefixed message which is
// returned as an error wrapping ErrFail.
func ReadStatus(r io.Reader) error {
	var s [4]byte
	if _, err := io.ReadFull(r, s[:]); err != nil {
		return err
	}
	switch string(s[:]) {
	case "OKAY":
		return nil
	case "FAIL":
		msg, err := ReadHexString(r)
		if err != nil {
			return fmt.Errorf("%w (unreadable message: %v)", ErrFail, err)
		}
		return fmt.Errorf("%w: %s", ErrFail, msg)
	}
	return fmt.Errorf("adb: unexpected status %q", s[:])
}

// ReadHexString reads a "%04x"-length-prefixed string.
func ReadHexString(r io.Reader) (string, error) {
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return "", err
	}
	n, err := strconv.ParseUint(string(l[:]), 16, 32)
	if err != nil {
		return "", fmt.Errorf("adb: bad length %q", l[:])
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return string(b), nil
}

// AppendHexString appends a "%04x"-length-prefixed string.
func AppendHexString(b []byte, s string) []byte {
	return append(b, fmt.Sprintf("%04x%s", len(s), s)...)
}
