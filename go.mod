module github.com/kubeplug/kubeplug

go 1.26

require github.com/tinylib/msgp v1.6.5

require github.com/philhofer/fwd v1.2.0 // indirect
