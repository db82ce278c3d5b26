// The Go packages generated from proto/erplink (import paths from the protos'
// go_package options). Only this file is committed: `buf generate --template
// clients/go/buf.gen.yaml` writes the packages under erplink/.
module erplink.dev/gen/go

go 1.26.0

require (
	connectrpc.com/connect v1.21.1
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)
