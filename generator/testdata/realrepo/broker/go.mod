module example.com/acme/broker/v2

go 1.25.0
