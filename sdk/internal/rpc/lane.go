package rpc

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/flowrun/flowrun/sdk/internal/pb"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// A lane carries a plugin's unary calls through a shared-memory region
// instead of gRPC: the host writes the request's protobuf bytes into the
// region and wakes the plugin's lane thread with a futex; the thread runs
// the same generated handler gRPC would, writes the answer back and wakes
// the host. A call is then two futex wake-ups and no socket, HTTP/2 frame
// or goroutine hand-off: over gRPC a trivial call cost about 0.2 ms of
// CPU here (host and plugin), most of it in the transport, once per call
// per batch.
//
// The host opens one lane per connection with the Lane/Open RPC (a plugin
// built before lanes answers Unimplemented, and everything stays on
// gRPC). A call takes the lane only when it is free: concurrent calls on
// one plugin, calls with call options (the blob getters' message sizes)
// and requests larger than the lane go over gRPC as before, so a lane
// never serialises what gRPC would have run in parallel. Errors cross as
// the same gRPC statuses; the caller's trace context crosses as
// traceparent/tracestate, as in gRPC metadata. A deadline does not cross:
// the host stops waiting when its context ends (the lane is then given up
// and later calls use gRPC), as it does when the plugin process is gone.

// laneOpenMethod is the RPC that hands a plugin its lane.
const laneOpenMethod = "/flowrun.v1.Lane/Open"

// The lane's layout: a header, then one message (a request, then its
// answer) of at most laneData bytes, gRPC's own default limit.
const (
	laneHeader = 64
	laneData   = 4 << 20
	laneSize   = laneHeader + laneData
)

// Lane states, the futex word at offset 0.
const (
	laneIdle    uint32 = iota // no call
	laneRequest               // the host wrote a request
	laneAnswer                // the plugin wrote the answer
	laneClosed                // the host is done with the lane
)

// lanePoll bounds each futex wait, so that a waiter notices a cancelled
// context, a plugin that is gone or a closed lane.
const lanePoll = 20 * time.Millisecond

// laneCalls counts the calls lanes answered in this process (tests).
var laneCalls atomic.Int64

// laneTrace is how the caller's span context crosses a lane.
var laneTrace = propagation.TraceContext{}

// laneWords are the header's fields.
type laneWords struct {
	state *uint32
	pid   *uint32 // the plugin process serving the lane
	n     *uint64 // the message's length
}

func wordsOf(b []byte) laneWords {
	return laneWords{
		state: (*uint32)(unsafe.Pointer(&b[0])),
		pid:   (*uint32)(unsafe.Pointer(&b[4])),
		n:     (*uint64)(unsafe.Pointer(&b[8])),
	}
}

// laneConn is the host's connection to one plugin: gRPC, with a lane for
// the calls that can take it.
type laneConn struct {
	*grpc.ClientConn
	once sync.Once
	lane *hostLane // nil: no lane
}

// withLane wraps conn so that its unary calls use a lane where they can.
func withLane(conn *grpc.ClientConn) grpc.ClientConnInterface {
	if !laneSupported || raceBuild {
		return conn
	}
	return &laneConn{ClientConn: conn}
}

func (c *laneConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if plainCall(opts) {
		c.once.Do(func() { c.lane = openLane(ctx, c.ClientConn) })
		if l := c.lane; l != nil && l.mu.TryLock() {
			err, ok := l.call(ctx, method, args, reply)
			l.mu.Unlock()
			if ok {
				return err
			}
		}
	}
	return c.ClientConn.Invoke(ctx, method, args, reply, opts...)
}

// plainCall reports whether opts are only what generated stubs add to
// every call (grpc.StaticMethod): nothing a lane would have to honour.
func plainCall(opts []grpc.CallOption) bool {
	for _, o := range opts {
		if _, ok := o.(grpc.StaticMethodCallOption); !ok {
			return false
		}
	}
	return true
}

// hostLane is the host's end of a lane.
type hostLane struct {
	mu     sync.Mutex // one call at a time
	region *region.Region
	buf    []byte
	w      laneWords
	dead   bool // given up: a call was abandoned, or the plugin is gone
	// closing is set when the connection shuts down, before closeWith
	// waits for the call in flight: that call gives up rather than wait
	// for an answer that may never come (a handler stuck in a plugin
	// whose process lives on), as gRPC fails its calls on a close.
	closing atomic.Bool
}

// openLane makes a lane and hands it to the plugin; nil when the plugin
// has none (it then answers Unimplemented) or anything fails: the calls
// stay on gRPC.
func openLane(ctx context.Context, conn *grpc.ClientConn) *hostLane {
	r, err := region.Create("lane", laneSize)
	if err != nil {
		return nil
	}
	ref := r.Ref()
	if err := conn.Invoke(ctx, laneOpenMethod, &pb.Ref{Region: ref.Region, Length: ref.Length}, &pb.Empty{}); err != nil {
		r.Close()
		return nil
	}
	l := &hostLane{region: r, buf: r.Bytes(), w: wordsOf(r.Bytes())}
	go l.closeWith(conn)
	return l
}

// closeWith closes the lane once the connection shuts down: the plugin's
// thread ends, and the region goes.
func (l *hostLane) closeWith(conn *grpc.ClientConn) {
	for s := conn.GetState(); s != connectivity.Shutdown; s = conn.GetState() {
		conn.WaitForStateChange(context.Background(), s)
	}
	l.closing.Store(true)
	futexWake(l.w.state)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dead = true
	atomic.StoreUint32(l.w.state, laneClosed)
	futexWake(l.w.state)
	l.region.Close()
}

// call makes one call through the lane; ok is false when the call must go
// over gRPC instead (nothing was sent).
func (l *hostLane) call(ctx context.Context, method string, args, reply any) (err error, ok bool) {
	in, isIn := args.(proto.Message)
	out, isOut := reply.(proto.Message)
	if l.dead || !isIn || !isOut {
		return nil, false
	}
	msg, fits := putCall(l.buf[laneHeader:], ctx, method, in)
	if !fits {
		return nil, false
	}
	atomic.StoreUint64(l.w.n, uint64(len(msg)))
	atomic.StoreUint32(l.w.state, laneRequest)
	futexWake(l.w.state)
	for atomic.LoadUint32(l.w.state) != laneAnswer {
		futexWait(l.w.state, laneRequest, lanePoll)
		if atomic.LoadUint32(l.w.state) == laneAnswer {
			break
		}
		if e := ctx.Err(); e != nil {
			l.dead = true
			return status.FromContextError(e).Err(), true
		}
		if !processAlive(int(atomic.LoadUint32(l.w.pid))) {
			l.dead = true
			return status.Errorf(codes.Unavailable, "%s: the plugin process is gone", method), true
		}
		if l.closing.Load() {
			l.dead = true
			return status.Errorf(codes.Unavailable, "%s: the connection to the plugin closed during the call", method), true
		}
	}
	n := atomic.LoadUint64(l.w.n)
	if n > laneData { // written by the plugin: never trusted to index the region
		l.dead = true
		return status.Errorf(codes.Internal, "%s: the plugin's answer claims %d bytes, the lane holds %d", method, n, laneData), true
	}
	err = takeAnswer(l.buf[laneHeader:laneHeader+n], out)
	atomic.StoreUint32(l.w.state, laneIdle)
	return err, true
}

// putCall writes a call into buf: the method, the trace context's
// entries, then the request's bytes, each length-prefixed but the last.
// It returns the message, or false when it does not fit.
func putCall(buf []byte, ctx context.Context, method string, in proto.Message) ([]byte, bool) {
	carrier := propagation.MapCarrier{}
	laneTrace.Inject(ctx, carrier)
	head := []string{method}
	for k, v := range carrier {
		head = append(head, k, v)
	}
	msg := buf[:0]
	msg = appendUvarint(msg, uint64(len(head)))
	for _, s := range head {
		msg = appendUvarint(msg, uint64(len(s)))
		msg = append(msg, s...)
	}
	if len(msg)+proto.Size(in) > len(buf) {
		return nil, false
	}
	msg, err := proto.MarshalOptions{}.MarshalAppend(msg, in)
	if err != nil || len(msg) > len(buf) || &msg[0] != &buf[0] {
		return nil, false
	}
	return msg, true
}

// Answers start with a byte that says what follows.
const (
	answerOK     = 0 // the reply's bytes
	answerStatus = 1 // a google.rpc.Status
)

// takeAnswer decodes an answer into out, or into the error it carries.
func takeAnswer(msg []byte, out proto.Message) error {
	if len(msg) == 0 {
		return status.Error(codes.Internal, "lane: empty answer")
	}
	switch msg[0] {
	case answerOK:
		if err := proto.Unmarshal(msg[1:], out); err != nil {
			return status.Errorf(codes.Internal, "lane: answer: %v", err)
		}
		return nil
	case answerStatus:
		st := status.New(codes.Unknown, "").Proto()
		if err := proto.Unmarshal(msg[1:], st); err != nil {
			return status.Errorf(codes.Internal, "lane: status: %v", err)
		}
		return status.FromProto(st).Err()
	}
	return status.Errorf(codes.Internal, "lane: answer of kind %d", msg[0])
}

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func readUvarint(b []byte) (uint64, []byte, bool) {
	var v uint64
	for i, c := range b {
		if i == 10 {
			break
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, b[i+1:], true
		}
	}
	return 0, nil, false
}

// laneRecorder is the grpc.ServiceRegistrar a plugin's services register
// on: it passes them to the gRPC server and keeps their handlers for the
// lane, then registers the Lane service itself.
type laneRecorder struct {
	grpc.ServiceRegistrar
	methods map[string]laneMethod // by full method name
}

type laneMethod struct {
	impl    any
	handler grpc.MethodHandler
}

func newLaneRecorder(s grpc.ServiceRegistrar) *laneRecorder {
	return &laneRecorder{ServiceRegistrar: s, methods: map[string]laneMethod{}}
}

func (r *laneRecorder) RegisterService(desc *grpc.ServiceDesc, impl any) {
	r.ServiceRegistrar.RegisterService(desc, impl)
	for _, m := range desc.Methods {
		r.methods["/"+desc.ServiceName+"/"+m.MethodName] = laneMethod{impl: impl, handler: m.Handler}
	}
}

// serveLanes registers the Lane service, whose Open starts a lane thread
// serving the recorded methods.
func (r *laneRecorder) serveLanes() {
	if laneSupported {
		r.ServiceRegistrar.RegisterService(&laneDesc, r)
	}
}

var laneDesc = grpc.ServiceDesc{
	ServiceName: "flowrun.v1.Lane",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Open",
		Handler: func(srv any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := new(pb.Ref)
			if err := dec(in); err != nil {
				return nil, err
			}
			return srv.(*laneRecorder).open(in)
		},
	}},
	Metadata: "lane",
}

// open maps the host's lane and starts serving it.
func (r *laneRecorder) open(ref *pb.Ref) (*pb.Empty, error) {
	reg, err := region.Open(ref.GetRegion())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "lane: %v", err)
	}
	if reg.Size() < laneSize {
		reg.Close()
		return nil, status.Errorf(codes.InvalidArgument, "lane: region of %d bytes, want %d", reg.Size(), laneSize)
	}
	w := wordsOf(reg.Bytes())
	atomic.StoreUint32(w.pid, uint32(currentPid()))
	go r.serve(reg, w)
	return &pb.Empty{}, nil
}

// serve answers the lane's calls one after another until the host closes
// it. Its goroutine is not locked to its thread: a handler that waits on
// goroutines of its own (a kernel's parallel tables) then lets this thread
// run them, where a locked thread would have to wake another.
func (r *laneRecorder) serve(reg *region.Region, w laneWords) {
	defer reg.Close()
	buf := reg.Bytes()[laneHeader:laneSize]
	for {
		s := atomic.LoadUint32(w.state)
		switch s {
		case laneClosed:
			return
		case laneRequest:
			n := atomic.LoadUint64(w.n)
			answer := r.handle(buf, min(n, uint64(len(buf))))
			laneCalls.Add(1)
			atomic.StoreUint64(w.n, uint64(len(answer)))
			// A host that gave up and closed the lane meanwhile set
			// laneClosed: keep it, and end.
			if !atomic.CompareAndSwapUint32(w.state, laneRequest, laneAnswer) {
				return
			}
			futexWake(w.state)
		default:
			futexWait(w.state, s, time.Second)
		}
	}
}

// handle runs one call from buf[:n] and writes its answer into buf.
func (r *laneRecorder) handle(buf []byte, n uint64) []byte {
	method, md, body, err := readCall(buf[:n])
	var reply any
	if err == nil {
		m, ok := r.methods[method]
		if !ok {
			err = status.Errorf(codes.Unimplemented, "lane: unknown method %s", method)
		} else {
			ctx := metadata.NewIncomingContext(context.Background(), md)
			dec := func(v any) error { return proto.Unmarshal(body, v.(proto.Message)) }
			reply, err = m.handler(m.impl, ctx, dec, plugin.TraceServerInterceptor())
		}
	}
	if err == nil {
		if out, ok := reply.(proto.Message); ok {
			if msg, e := (proto.MarshalOptions{}).MarshalAppend(append(buf[:0], answerOK), out); e == nil && len(msg) <= len(buf) && &msg[0] == &buf[0] {
				return msg
			}
		}
		err = status.Errorf(codes.ResourceExhausted, "lane: %s: answer larger than %d bytes", method, len(buf))
	}
	st, _ := status.FromError(err)
	msg, e := (proto.MarshalOptions{}).MarshalAppend(append(buf[:0], answerStatus), st.Proto())
	if e != nil || len(msg) > len(buf) || &msg[0] != &buf[0] {
		msg, _ = (proto.MarshalOptions{}).MarshalAppend(append(buf[:0], answerStatus),
			status.New(codes.Internal, "lane: error too large").Proto())
	}
	return msg
}

// readCall parses what putCall wrote.
func readCall(msg []byte) (method string, md metadata.MD, body []byte, err error) {
	bad := status.Error(codes.Internal, "lane: malformed call")
	count, rest, ok := readUvarint(msg)
	if !ok || count == 0 || count%2 == 0 || count > 64 {
		return "", nil, nil, bad
	}
	fields := make([]string, count)
	for i := range fields {
		var n uint64
		if n, rest, ok = readUvarint(rest); !ok || n > uint64(len(rest)) {
			return "", nil, nil, bad
		}
		fields[i], rest = string(rest[:n]), rest[n:]
	}
	md = metadata.MD{}
	for i := 1; i+1 < len(fields); i += 2 {
		md.Set(strings.ToLower(fields[i]), fields[i+1])
	}
	return fields[0], md, rest, nil
}
