!> two_mass_flex_f: the flexible side of the two-mass oscillator
!> (scenarios/two_mass_oscillator_mtx.toml) in Fortran, over the rbcosim_client module.
!> It follows PROTOCOL.md section 7a, so the rigid side's results equal `rbcosim run`'s.
!>
!>   two_mass_flex_f ENDPOINT (--scenario FILE | --session ID) [options]
!>     --scenario FILE   create a session of FILE (a path the server can read), print its id
!>     --session ID      join a session (e.g. the one `rbcosim cosim --serve-external` serves)
!>     --set KEY=VALUE   a scenario override for --scenario (repeatable)
!>     --data DIR        folder of m.mtx, k.mtx, c.mtx (default scenarios/data/two_mass)
!>     --point NAME, --joint NAME   default "interface", "coupling"
!>     --timeout S       seconds to wait for any reply (default 120)
!>     --close           close the session at the end (default: leave it for its results)
program two_mass_flex
  use, intrinsic :: iso_c_binding, only: c_ptr, c_double, c_associated
  use, intrinsic :: iso_fortran_env, only: error_unit, output_unit
  use rbcosim_client
  use dense, only: dp
  use flex_endpoint_mod, only: flex_endpoint
  use two_mass_setup, only: load_structure, grounded_reference
  implicit none

  character(len=:), allocatable :: endpoint, scenario, session, data_dir, point, joint, message
  character(len=256), allocatable :: keys(:), values(:)
  character(len=:), allocatable :: scheme
  real(dp) :: timeout_s
  logical :: close_at_end
  type(c_ptr) :: client
  type(rbc_coupling) :: coupling
  type(rbc_exchange) :: ex
  type(flex_endpoint) :: ep
  real(c_double), pointer :: mot(:, :)
  real(dp) :: t, motion(19), kin(13), energy, mass(6, 6), jac(6, 6, 2), jac_c(6, 6, 2, 1)
  real(dp), allocatable :: poly(:, :)
  integer :: status, i
  integer(kind(ex%step)) :: k
  logical :: ok, handover, has_jacobian

  call parse_arguments()
  client = rbcf_connect(endpoint, nint(1000 * timeout_s), error=message)
  if (.not. c_associated(client)) call fail("cannot connect to " // endpoint // ": " // message)
  call check(rbcf_hello(client, "two_mass_flex_f (Fortran)"), "hello")
  if (allocated(scenario)) then
    call check(rbcf_create_session(client, scenario_path=scenario, override_keys=keys, &
                                   override_values=values, wait_for_joints=.true.), &
               "create_session")
    write (output_unit, "(a)") "session " // rbcf_session_id(client)
    flush (output_unit)
  else
    call check(rbcf_join_session(client, session), "join_session")
  end if
  call check(rbcf_attach(client, [point], [joint], coupling, ex, &
                         name="two_mass_flex_f " // joint), "attach")
  scheme = rbcf_scheme(coupling)
  select case (scheme)
  case ("jacobi", "gauss_seidel_rigid_first", "gauss_seidel_flex_first", "interface_jacobian")
  case default
    call fail("coupling scheme " // scheme // " is not one a separate flexible solver runs")
  end select
  if (ex%step /= 0) call fail("the session is not at step 0: a fresh solver starts a run")
  call load_structure(data_dir, scheme, int(coupling%extrapolation), &
                      int(coupling%micro_steps), coupling%macro_step, &
                      coupling%added_mass /= 0, ep, ok, message)
  if (.not. ok) call fail(message)

  ! Initialise from the motion at t_0; hand the added mass over; report at step 0 with the
  ! initial wrench held, so that the motions of the first step include it.
  t = ex%time
  k = ex%step
  mot => rbcf_motions(ex)
  if (.not. associated(mot)) call fail("the attach reply carries no motions")
  motion = mot(:, 1)
  call ep%initialize(t, motion, grounded_reference, handover, mass)
  if (handover) call check(rbcf_set_added_mass(client, reshape(mass, [6, 6, 1]), &
                                               ["inertial"]), "set_added_mass")
  call ep%report(kin, energy)
  poly = ep%polynomial(t)
  call check(rbcf_report(client, ex, wrench=reshape(poly, [6, size(poly, 2), 1]), &
                         flex_kinematics=reshape(kin, [13, 1]), flex_energy=[energy]), &
             "report")
  motion = rbcf_motions_row(ex)

  ! One exchange in each direction per macro step (PROTOCOL.md 7a, item 4).
  do while (k < coupling%n_steps)
    call ep%report(kin, energy)
    call ep%inputs_for_rigid(t, motion, poly, jac, has_jacobian, ok)
    if (.not. ok) call fail("the structure's state is not finite")
    if (has_jacobian) then
      ! C order [1][2][6][6]: each 6 x 6 block transposed (see rbcosim_client)
      jac_c(:, :, 1, 1) = transpose(jac(:, :, 1))
      jac_c(:, :, 2, 1) = transpose(jac(:, :, 2))
      status = rbcf_step_send(client, wrench=reshape(poly, [6, size(poly, 2), 1]), &
                              flex_kinematics=reshape(kin, [13, 1]), flex_energy=[energy], &
                              interface_jacobian=jac_c)
    else
      status = rbcf_step_send(client, wrench=reshape(poly, [6, size(poly, 2), 1]), &
                              flex_kinematics=reshape(kin, [13, 1]), flex_energy=[energy])
    end if
    call check(status, "step")
    if (ep%needs_end_motion()) then
      call check(rbcf_step_wait(client, ex), "step")
      call ep%finish(t, motion, rbcf_motions_row(ex), ex%time, ok)
    else
      call ep%finish(t, motion, ok=ok)  ! while the rigid side takes the same step
      call check(rbcf_step_wait(client, ex), "step")
    end if
    if (.not. ok) call fail("the structure's state is not finite")
    k = ex%step
    t = ex%time
    motion = rbcf_motions_row(ex)
  end do

  ! The final report: the server records the last result row.
  call ep%report(kin, energy)
  call check(rbcf_report(client, ex, flex_kinematics=reshape(kin, [13, 1]), &
                         flex_energy=[energy]), "report")
  write (output_unit, "(a, i0, a, es12.5, a, es12.5, a)") "done: ", k, " steps to t = ", t, &
    " s, energy delivered ", energy, " J"
  if (close_at_end) then
    call check(rbc_close_session(client), "close")
  else
    call check(rbc_detach(client), "detach")
  end if
  call rbc_destroy(client)

contains

  !> The motion row (19) of the one point in an exchange.
  function rbcf_motions_row(e) result(row)
    type(rbc_exchange), intent(in) :: e
    real(dp) :: row(19)
    real(c_double), pointer :: m(:, :)
    m => rbcf_motions(e)
    if (.not. associated(m)) call fail("a reply carries no motions")
    row = m(:, 1)
  end function rbcf_motions_row

  subroutine check(code, what)
    integer, intent(in) :: code
    character(len=*), intent(in) :: what
    if (code == RBC_OK) return
    call fail(what // ": " // rbcf_error_code(client) // ": " // rbcf_error_message(client))
  end subroutine check

  subroutine fail(text)
    character(len=*), intent(in) :: text
    write (error_unit, "(a)") "two_mass_flex_f: " // text
    error stop 1
  end subroutine fail

  subroutine parse_arguments()
    character(len=4096) :: arg
    integer :: n, eq
    n = command_argument_count()
    data_dir = "scenarios/data/two_mass"
    point = "interface"
    joint = "coupling"
    timeout_s = 120.0_dp
    close_at_end = .false.
    allocate (keys(0), values(0))
    i = 1
    do while (i <= n)
      call get_command_argument(i, arg)
      select case (trim(arg))
      case ("--scenario")
        scenario = next_value()
      case ("--session")
        session = next_value()
      case ("--data")
        data_dir = next_value()
      case ("--point")
        point = next_value()
      case ("--joint")
        joint = next_value()
      case ("--timeout")
        arg = next_value()
        read (arg, *) timeout_s
      case ("--set")
        arg = next_value()
        eq = index(arg, "=")
        if (eq < 2) call fail("--set: expected KEY=VALUE, got " // trim(arg))
        keys = [character(len=256) :: keys, adjustl(arg(:eq - 1))]
        values = [character(len=256) :: values, adjustl(arg(eq + 1:))]
      case ("--close")
        close_at_end = .true.
      case ("-h", "--help")
        call usage()
        stop
      case default
        if (arg(1:1) == "-" .or. allocated(endpoint)) call fail("unexpected " // trim(arg))
        endpoint = trim(arg)
      end select
      i = i + 1
    end do
    if (.not. allocated(endpoint) .or. (allocated(scenario) .eqv. allocated(session))) then
      call usage()
      error stop 2
    end if
  end subroutine parse_arguments

  function next_value() result(v)
    character(len=:), allocatable :: v
    character(len=4096) :: arg
    if (i >= command_argument_count()) call fail("an option lacks its value")
    i = i + 1
    call get_command_argument(i, arg)
    v = trim(arg)
  end function next_value

  subroutine usage()
    write (error_unit, "(a)") "usage: two_mass_flex_f ENDPOINT (--scenario FILE | " // &
      "--session ID) [--set KEY=VALUE]... [--data DIR] [--point NAME] [--joint NAME] " // &
      "[--timeout S] [--close]"
  end subroutine usage

end program two_mass_flex
