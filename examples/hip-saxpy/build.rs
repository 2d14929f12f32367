fn main() {
    mcpp_build::build();
}
