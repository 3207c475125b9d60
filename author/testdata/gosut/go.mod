module example.com/kvsut

go 1.26
