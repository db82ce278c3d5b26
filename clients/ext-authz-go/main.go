// Command ext-authz-go calls erplink's Envoy external-authorization service
// (envoy.service.auth.v3.Authorization/Check) with the request types of
// Envoy's own generated Go package (github.com/envoyproxy/go-control-plane),
// over grpc-go, as an Envoy proxy would.
//
// It reads checks as JSON lines on stdin, one per line:
//
//	{"name": "...", "method": "GET", "path": "/odata/prod/SALES/Orders",
//	 "headers": {"authorization": "Bearer erpl_..."}, "rawHeaders": false,
//	 "body": "...", "rawBody": false, "contextExtensions": {...}, "id": "..."}
//
// and prints one JSON line per check on stdout with what erplink answered:
// the gRPC status of the call, the decision's status code, and the allowed
// (ok_response) or denied (denied_response) HTTP answer Envoy would act on.
// The test suite (test-external/ext-authz-go.ts) compares these lines with
// the data path's answers to the same requests.
//
// Usage: ext-authz-go -addr 127.0.0.1:8080 [-token <ERPLINK_EXT_AUTHZ_TOKEN>] < checks.jsonl
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// check is one request to authorize, as the test suite describes it.
type check struct {
	Name              string            `json:"name"`
	ID                string            `json:"id"`
	Method            string            `json:"method"`
	Path              string            `json:"path"`
	Host              string            `json:"host"`
	Headers           map[string]string `json:"headers"`
	RawHeaders        bool              `json:"rawHeaders"`
	Body              string            `json:"body"`
	RawBody           bool              `json:"rawBody"`
	ContextExtensions map[string]string `json:"contextExtensions"`
}

// result is what erplink answered, as one output line.
type result struct {
	Name string `json:"name"`
	// GrpcCode is the status code of the call itself ("OK" unless erplink failed the call).
	GrpcCode    string `json:"grpcCode"`
	GrpcMessage string `json:"grpcMessage,omitempty"`
	// Code is CheckResponse.status.code (0 allows the request).
	Code int32 `json:"code"`
	// Allowed: an ok_response; otherwise a denied_response with HTTP status Status.
	Allowed              bool              `json:"allowed"`
	Status               int32             `json:"status,omitempty"`
	Body                 string            `json:"body,omitempty"`
	Headers              map[string]string `json:"headers,omitempty"`
	HeadersToRemove      []string          `json:"headersToRemove,omitempty"`
	ResponseHeadersToAdd map[string]string `json:"responseHeadersToAdd,omitempty"`
}

func headerMap(options []*corev3.HeaderValueOption) map[string]string {
	if len(options) == 0 {
		return nil
	}
	out := make(map[string]string, len(options))
	for _, o := range options {
		out[o.GetHeader().GetKey()] = o.GetHeader().GetValue()
	}
	return out
}

func request(c check) *authv3.CheckRequest {
	http := &authv3.AttributeContext_HttpRequest{
		Id:       c.ID,
		Method:   c.Method,
		Path:     c.Path,
		Host:     c.Host,
		Scheme:   "http",
		Protocol: "HTTP/1.1",
		Size:     -1,
	}
	if c.RawHeaders {
		// As Envoy sends them with encode_raw_headers: true.
		names := make([]string, 0, len(c.Headers))
		for name := range c.Headers {
			names = append(names, name)
		}
		sort.Strings(names)
		headerMap := &corev3.HeaderMap{}
		for _, name := range names {
			headerMap.Headers = append(headerMap.Headers, &corev3.HeaderValue{Key: name, RawValue: []byte(c.Headers[name])})
		}
		http.HeaderMap = headerMap
	} else {
		http.Headers = c.Headers
	}
	if c.Body != "" {
		// As Envoy sends a buffered body (with_request_body), whole.
		if c.RawBody {
			http.RawBody = []byte(c.Body)
		} else {
			http.Body = c.Body
		}
		if !c.RawHeaders {
			if http.Headers == nil {
				http.Headers = map[string]string{}
			}
			http.Headers["x-envoy-auth-partial-body"] = "false"
		}
		http.Size = int64(len(c.Body))
	}
	return &authv3.CheckRequest{
		Attributes: &authv3.AttributeContext{
			Request:           &authv3.AttributeContext_Request{Http: http},
			ContextExtensions: c.ContextExtensions,
		},
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "erplink's host:port (h2c)")
	token := flag.String("token", "", "ERPLINK_EXT_AUTHZ_TOKEN, sent as the call's bearer token (needed for credential injection)")
	flag.Parse()

	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintf(os.Stderr, "ext-authz-go: %v\n", err)
		os.Exit(2)
	}
	defer conn.Close()
	client := authv3.NewAuthorizationClient(conn)

	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 16<<20)
	out := json.NewEncoder(os.Stdout)
	out.SetEscapeHTML(false)
	for in.Scan() {
		var c check
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			fmt.Fprintf(os.Stderr, "ext-authz-go: bad input line: %v\n", err)
			os.Exit(2)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if *token != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+*token)
		}
		res, err := client.Check(ctx, request(c))
		cancel()
		r := result{Name: c.Name, GrpcCode: status.Code(err).String()}
		if err != nil {
			r.GrpcMessage = status.Convert(err).Message()
		} else {
			r.Code = res.GetStatus().GetCode()
			if ok := res.GetOkResponse(); ok != nil {
				r.Allowed = true
				r.Headers = headerMap(ok.GetHeaders())
				r.HeadersToRemove = ok.GetHeadersToRemove()
				r.ResponseHeadersToAdd = headerMap(ok.GetResponseHeadersToAdd())
			} else if denied := res.GetDeniedResponse(); denied != nil {
				r.Status = int32(denied.GetStatus().GetCode())
				r.Body = denied.GetBody()
				r.Headers = headerMap(denied.GetHeaders())
			}
		}
		if err := out.Encode(r); err != nil {
			fmt.Fprintf(os.Stderr, "ext-authz-go: %v\n", err)
			os.Exit(2)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "ext-authz-go: reading stdin: %v\n", err)
		os.Exit(2)
	}
}
