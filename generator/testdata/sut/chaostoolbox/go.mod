module github.com/example/lockd

go 1.22
