package plugin

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// traceContext is the one propagator plugin calls use. It is named here
// rather than taken from otel's global, so that a host or plugin that never
// set a global propagator still links its spans.
var traceContext = propagation.TraceContext{}

// GRPCDialOptions are the dial options a host gives go-plugin
// (ClientConfig.GRPCDialOptions) so that every plugin call carries the
// caller's W3C trace context in its gRPC metadata.
func GRPCDialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(TraceClientInterceptor())}
}

// GRPCServer builds a plugin's gRPC server with the trace interceptor; it
// fits go-plugin's ServeConfig.GRPCServer.
func GRPCServer(opts []grpc.ServerOption) *grpc.Server {
	opts = append(opts, grpc.ChainUnaryInterceptor(TraceServerInterceptor()))
	return grpc.NewServer(opts...)
}

// TraceClientInterceptor injects the span context of each call's ctx into
// the outgoing metadata as W3C traceparent/tracestate.
func TraceClientInterceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		md, ok := metadata.FromOutgoingContext(ctx)
		if ok {
			md = md.Copy()
		} else {
			md = metadata.MD{}
		}
		traceContext.Inject(ctx, metadataCarrier(md))
		return invoker(metadata.NewOutgoingContext(ctx, md), method, req, reply, cc, opts...)
	}
}

// TraceServerInterceptor extracts the caller's W3C trace context from the
// incoming metadata, so that the ctx a plugin method receives carries the
// caller's span context and spans the plugin starts are its children.
func TraceServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if md, ok := metadata.FromIncomingContext(ctx); ok {
			ctx = traceContext.Extract(ctx, metadataCarrier(md))
		}
		return handler(ctx, req)
	}
}

// metadataCarrier adapts gRPC metadata to otel's TextMapCarrier. Keys are
// lower case in both.
type metadataCarrier metadata.MD

func (c metadataCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c metadataCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c metadataCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
