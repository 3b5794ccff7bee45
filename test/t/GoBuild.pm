#-------------------------------------------------------------------------
# test/t/GoBuild.pm
#	  Building Go code of the tree (examples/go, clients/go) offline, in
#	  GOPATH mode, against Debian's packaged Go libraries
#	  (golang-github-jackc-pgx-v4-dev in /usr/share/gocode): a GOPATH of
#	  its own holds src/schedq.dev/schedq, a link to clients/go, followed
#	  by /usr/share/gocode.  No module is downloaded (GOPROXY=off).
#
#	  go_missing()             why Go code cannot be built here, or undef
#	  go_env($tmp)             the environment for go commands (a list)
#	  go_build($tmp, $out, $src)  go build -o $out $src: (ok, output)
#-------------------------------------------------------------------------
package GoBuild;

use strict;
use warnings;

use Exporter 'import';
use File::Path qw(make_path);

our @EXPORT = qw(go_missing go_env go_build);

my $gocode = '/usr/share/gocode';

sub go_missing
{
	my $version = `go version 2>/dev/null` // '';
	return 'no Go toolchain (apt-get install golang-go)'
	  unless $version =~ /^go version/;
	return "no pgx v4 in $gocode (apt-get install golang-github-jackc-pgx-v4-dev)"
	  unless -d "$gocode/src/github.com/jackc/pgx/v4";
	return undef;
}

sub go_env
{
	my ($tmp) = @_;
	my $gopath = "$tmp/gopath";
	my $link = "$gopath/src/schedq.dev/schedq";
	unless (-l $link)
	{
		make_path("$gopath/src/schedq.dev");
		symlink("$ENV{SCHEDQ_SRCDIR}/clients/go", $link)
		  or die "symlink $link: $!";
	}
	return (
		GO111MODULE => 'off',
		GOPATH => "$gopath:$gocode",
		GOCACHE => "$tmp/gocache",
		GOPROXY => 'off',
		GOFLAGS => '');
}

sub go_build
{
	my ($tmp, $out, $src) = @_;
	my %env = go_env($tmp);
	local @ENV{ keys %env } = values %env;
	my $output = `go build -o $out $src 2>&1`;
	return ($? == 0, $output);
}

1;
