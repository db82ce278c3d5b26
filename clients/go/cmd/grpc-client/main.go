// Command grpc-client calls erplink with grpc-go over HTTP/2 cleartext (h2c):
// Authorize (allowed, each denial step, rate limited), systems with a bearer
// token, the BadRequest detail of a validation error, and the rate-limit
// metadata. It prints one line per check and exits 1 if any failed.
//
//	ERPLINK_URL=http://localhost:8080 ERPLINK_TOKEN=… ERPLINK_DATA_KEY=… \
//	ERPLINK_EXPIRED_KEY=… ERPLINK_LIMITED_KEY=… go run ./cmd/grpc-client
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	adminv1 "erplink.dev/gen/go/erplink/admin/v1"
	authzv1 "erplink.dev/gen/go/erplink/authz/v1"
	errorsv1 "erplink.dev/gen/go/erplink/errors/v1"

	"erplink.dev/clients/go/internal/scenario"
)

func main() {
	env := scenario.FromEnv("grpc-client")
	os.Exit(run(env))
}

func run(env scenario.Env) int {
	report := scenario.NewReport()
	// erplink serves gRPC in cleartext; put TLS in front and use
	// credentials.NewTLS in production.
	conn, err := grpc.NewClient(env.Target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		report.Check("connect", err)
		return report.Done()
	}
	defer conn.Close()
	authz := authzv1.NewAuthorizationServiceClient(conn)
	systems := adminv1.NewSystemServiceClient(conn)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Authorize needs no credential of its own: the key to check is in the request.
	for _, c := range scenario.AuthorizeCases(env) {
		res, err := authz.Authorize(ctx, c.Request)
		if err == nil {
			err = scenario.CheckDecision(c, res)
		}
		report.Check(c.Name, err)
	}
	report.Check("authorize denied: rate limited", func() error {
		req := &authzv1.AuthorizeRequest{ApiKey: env.LimitedKey, Instance: scenario.Instance, Service: scenario.Service,
			Entity: scenario.Entity, Operation: authzv1.Operation_OPERATION_GET}
		first, err := authz.Authorize(ctx, req)
		if err != nil {
			return err
		}
		second, err := authz.Authorize(ctx, req)
		if err != nil {
			return err
		}
		return scenario.CheckRateLimited(first, second)
	}())
	report.Check("authorize invalid request", func() error {
		_, err := authz.Authorize(ctx, &authzv1.AuthorizeRequest{ApiKey: env.DataKey})
		if status.Code(err) != codes.InvalidArgument {
			return fmt.Errorf("got %v, want InvalidArgument", err)
		}
		return nil
	}())
	report.Check("unknown method is unimplemented", func() error {
		// A method erplink does not serve (an older or newer client): gRPC status 12.
		err := conn.Invoke(ctx, "/erplink.authz.v1.AuthorizationService/NoSuchMethod", &authzv1.AuthorizeRequest{}, &authzv1.AuthorizeResponse{})
		if status.Code(err) != codes.Unimplemented {
			return fmt.Errorf("got %v, want Unimplemented", err)
		}
		return nil
	}())

	// The admin services take the bearer token in the `authorization` metadata.
	admin := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+env.Token)

	report.Check("admin call without token is unauthenticated", func() error {
		_, err := systems.ListSystems(ctx, &adminv1.ListSystemsRequest{})
		if status.Code(err) != codes.Unauthenticated {
			return fmt.Errorf("got %v, want Unauthenticated", err)
		}
		return nil
	}())

	var created *adminv1.System
	report.Check("create system", func() error {
		res, err := systems.CreateSystem(admin, &adminv1.CreateSystemRequest{System: &adminv1.System{
			Name:        fmt.Sprintf("%s-%d", env.Name, time.Now().UnixNano()),
			Description: "created by clients/go/cmd/grpc-client",
		}})
		if err != nil {
			return err
		}
		created = res.GetSystem()
		if !strings.HasPrefix(created.GetId(), "sys_") || created.GetCreatedAt() == nil {
			return fmt.Errorf("got %v, want an id sys_… and created_at", created)
		}
		return nil
	}())

	report.Check("list systems", func() error {
		if created == nil {
			return errors.New("no system was created")
		}
		token := ""
		for {
			res, err := systems.ListSystems(admin, &adminv1.ListSystemsRequest{PageSize: 100, PageToken: token})
			if err != nil {
				return err
			}
			for _, s := range res.GetSystems() {
				if s.GetId() == created.GetId() && s.GetName() == created.GetName() {
					return nil
				}
			}
			if token = res.GetNextPageToken(); token == "" {
				return fmt.Errorf("%s is not listed", created.GetId())
			}
		}
	}())

	report.Check("validation error carries a BadRequest detail", func() error {
		var trailer metadata.MD
		_, err := systems.CreateSystem(admin, &adminv1.CreateSystemRequest{System: &adminv1.System{Name: ""}}, grpc.Trailer(&trailer))
		st := status.Convert(err)
		if st.Code() != codes.InvalidArgument {
			return fmt.Errorf("got %v, want InvalidArgument", err)
		}
		// status.Details decodes the google.rpc.Status details (trailer
		// grpc-status-details-bin) with the types linked into the program:
		// importing errorsv1 registers erplink.errors.v1.BadRequest.
		for _, detail := range st.Details() {
			if br, ok := detail.(*errorsv1.BadRequest); ok {
				for _, v := range br.GetFieldViolations() {
					if v.GetField() == "name" && v.GetDescription() == "is required" {
						return nil
					}
				}
				return fmt.Errorf("BadRequest %v has no violation name: is required", br)
			}
		}
		return fmt.Errorf("no BadRequest among the details %v", st.Details())
	}())

	report.Check("rate-limit metadata", func() error {
		var first, second metadata.MD
		if _, err := systems.ListSystems(admin, &adminv1.ListSystemsRequest{PageSize: 1}, grpc.Header(&first)); err != nil {
			return err
		}
		if _, err := systems.ListSystems(admin, &adminv1.ListSystemsRequest{PageSize: 1}, grpc.Header(&second)); err != nil {
			return err
		}
		a, err := scenario.ParseRateLimit(firstValue(first))
		if err != nil {
			return err
		}
		b, err := scenario.ParseRateLimit(firstValue(second))
		if err != nil {
			return err
		}
		// Each call takes one from the budget (unless a window rolled over between them).
		if a.Reset == b.Reset && b.Remaining != a.Remaining-1 {
			return fmt.Errorf("remaining %d then %d, want one less", a.Remaining, b.Remaining)
		}
		return nil
	}())

	report.Check("rate-limit metadata on an error", func() error {
		var header, trailer metadata.MD
		_, err := systems.GetSystem(admin, &adminv1.GetSystemRequest{Id: "sys_00000000000000000000000000"}, grpc.Header(&header), grpc.Trailer(&trailer))
		if status.Code(err) != codes.NotFound {
			return fmt.Errorf("got %v, want NotFound", err)
		}
		// An error without a message is "trailers-only": the fields arrive as trailers.
		_, err = scenario.ParseRateLimit(firstValue(metadata.Join(header, trailer)))
		return err
	}())

	return report.Done()
}

// firstValue returns the first value of a metadata key, or "".
func firstValue(md metadata.MD) func(string) string {
	return func(key string) string {
		if v := md.Get(key); len(v) > 0 {
			return v[0]
		}
		return ""
	}
}
