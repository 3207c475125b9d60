module example.com/tallyd

go 1.22
