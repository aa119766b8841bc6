package main

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"
)

// checkCollector says at once, on w, when an OTLP exporter's collector
// does not accept connections, rather than only when the spans fail to
// go out at the end of the run; it returns a phrase for that later
// error ("" when the collector answered or the exporter is not OTLP).
func checkCollector(spec string, w io.Writer) string {
	if !strings.HasPrefix(spec, "otlp-grpc://") && !strings.HasPrefix(spec, "otlp-http://") {
		return ""
	}
	u, err := url.Parse(spec)
	if err != nil {
		return "" // config checked the form; the exporter reports the rest
	}
	c, err := net.DialTimeout("tcp", u.Host, time.Second)
	if err == nil {
		c.Close()
		return ""
	}
	fmt.Fprintf(w, "flowrun: no trace collector at %s (%v): the run goes on, its spans will be lost (start one: scripts/jaeger.sh start)\n", u.Host, err)
	return " (no collector at " + u.Host + ")"
}
