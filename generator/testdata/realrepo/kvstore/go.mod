module example.com/acme/kvstore/v10

go 1.26
