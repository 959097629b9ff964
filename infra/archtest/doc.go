// Package archtest holds tests of the repository's layout rather than of its
// behaviour: that the import rule each package states in its doc comment
// ("It may import …") is the rule its code keeps.
//
// It may import nothing of the project.
package archtest
