package nemesis

func storageNemeses() []Nemesis { return nil }
