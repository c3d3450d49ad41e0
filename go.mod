module github.com/sbx-dev/sbx

go 1.26.8

require (
	connectrpc.com/connect v1.19.1 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)
