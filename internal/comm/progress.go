package comm

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// progress is the side channel that names the rank a hung collective waits
// for: every rank tells rank 0, over its own TCP connection and outside MPI,
// how many collectives it has started; rank 0 keeps the table and answers
// queries from any rank even while its own main goroutine is stuck. It is
// best effort: when a connection cannot be made the HangError says the
// missing ranks are unknown.
type progress struct {
	rank, size int
	table      []atomic.Int64 // rank 0: collectives started by each rank

	ln     net.Listener // rank 0
	connMu sync.Mutex   // others: one writer (and query reader) at a time
	conn   net.Conn     // others
	latest atomic.Int64
	notify chan struct{}
	quit   chan struct{}
	wg     sync.WaitGroup
}

// startProgress sets the side channel up; it is a collective (rank 0
// broadcasts its address). Failure to connect is logged, not fatal.
func startProgress(c Comm) (*progress, error) {
	p := &progress{rank: c.Rank(), size: c.Size(), table: make([]atomic.Int64, c.Size()), notify: make(chan struct{}, 1), quit: make(chan struct{})}
	var addr string
	if p.rank == 0 {
		ln, err := net.Listen("tcp", ":0")
		if err != nil {
			slog.Warn("comm: no progress side channel; a hang will not name the missing rank", "err", err)
		} else {
			p.ln = ln
			addr = advertise(ln.Addr().(*net.TCPAddr).Port)
			p.wg.Add(1)
			go p.serve()
		}
	}
	b, err := c.BcastBytes([]byte(addr), 0)
	if err != nil {
		p.close()
		return nil, fmt.Errorf("comm: broadcasting the progress address: %w", err)
	}
	if p.rank != 0 && len(b) > 0 {
		p.dial(string(b))
	}
	return p, nil
}

// advertise lists the addresses other hosts may reach rank 0 at: its
// interfaces' IPs, then its host name (comma-separated host:port).
func advertise(port int) string {
	var out []string
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
				out = append(out, net.JoinHostPort(ipn.IP.String(), strconv.Itoa(port)))
			}
		}
	}
	out = append(out, net.JoinHostPort(hostname(), strconv.Itoa(port)))
	return strings.Join(out, ",")
}

func (p *progress) dial(addrs string) {
	for _, a := range strings.Split(addrs, ",") {
		conn, err := net.DialTimeout("tcp", a, time.Second)
		if err != nil {
			continue
		}
		var hello [9]byte
		hello[0] = 'H'
		binary.LittleEndian.PutUint64(hello[1:], uint64(p.rank))
		if _, err := conn.Write(hello[:]); err != nil {
			conn.Close()
			continue
		}
		p.conn = conn
		p.wg.Add(1)
		go p.send()
		return
	}
	slog.Warn("comm: cannot reach rank 0's progress side channel; a hang will not name the missing rank", "rank", p.rank, "addrs", addrs)
}

// serve accepts the other ranks' connections (rank 0).
func (p *progress) serve() {
	defer p.wg.Done()
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(conn)
	}
}

// handle reads one rank's messages: 'H' rank, 'P' count, 'Q' (answered with
// the table, size little-endian int64s).
func (p *progress) handle(conn net.Conn) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	from := -1
	var buf [8]byte
	for {
		kind, err := r.ReadByte()
		if err != nil {
			return
		}
		switch kind {
		case 'H', 'P':
			if _, err := io.ReadFull(r, buf[:]); err != nil {
				return
			}
			v := int64(binary.LittleEndian.Uint64(buf[:]))
			if kind == 'H' {
				if v < 0 || int(v) >= p.size {
					return
				}
				from = int(v)
			} else if from >= 0 {
				p.table[from].Store(v)
			}
		case 'Q':
			out := make([]byte, 8*p.size)
			for i := range p.table {
				binary.LittleEndian.PutUint64(out[8*i:], uint64(p.table[i].Load()))
			}
			if _, err := conn.Write(out); err != nil {
				return
			}
		default:
			return
		}
	}
}

// send forwards this rank's latest count to rank 0 whenever it changes.
func (p *progress) send() {
	defer p.wg.Done()
	var msg [9]byte
	msg[0] = 'P'
	for {
		select {
		case <-p.quit:
			return
		case <-p.notify:
		}
		binary.LittleEndian.PutUint64(msg[1:], uint64(p.latest.Load()))
		p.connMu.Lock()
		_, err := p.conn.Write(msg[:])
		p.connMu.Unlock()
		if err != nil {
			return
		}
	}
}

// reached records that this rank has started n collectives.
func (p *progress) reached(n int64) {
	if p == nil {
		return
	}
	p.latest.Store(n)
	if p.rank == 0 {
		p.table[0].Store(n)
		return
	}
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// behind returns the ranks that have started fewer than n collectives, nil
// when this rank cannot find out.
func (p *progress) behind(n int64) []int {
	if p == nil {
		return nil
	}
	counts := make([]int64, p.size)
	if p.rank == 0 {
		for i := range p.table {
			counts[i] = p.table[i].Load()
		}
	} else {
		if p.conn == nil {
			return nil
		}
		p.connMu.Lock()
		p.conn.SetDeadline(time.Now().Add(2 * time.Second))
		_, err := p.conn.Write([]byte{'Q'})
		buf := make([]byte, 8*p.size)
		if err == nil {
			_, err = io.ReadFull(p.conn, buf)
		}
		p.conn.SetDeadline(time.Time{})
		p.connMu.Unlock()
		if err != nil {
			return nil
		}
		for i := range counts {
			counts[i] = int64(binary.LittleEndian.Uint64(buf[8*i:]))
		}
		counts[p.rank] = p.latest.Load()
	}
	var out []int
	for r, v := range counts {
		if v < n {
			out = append(out, r)
		}
	}
	return out
}

func (p *progress) close() {
	select {
	case <-p.quit:
		return
	default:
	}
	close(p.quit)
	if p.ln != nil {
		p.ln.Close()
	}
	p.connMu.Lock()
	if p.conn != nil {
		p.conn.Close()
	}
	p.connMu.Unlock()
	p.wg.Wait()
}
